/* Built against an installed libmoe: links, runs one tiny forward. */
#include <moe.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    moe_ctx *ctx;
    if (moe_ctx_create(NULL, &ctx) != MOE_OK) return 1;
    float gate[2 * 4 * 8], up[2 * 4 * 8], down[2 * 8 * 4], x[8], out[8], w[1] = {1.0f};
    int32_t ids[1] = {1};
    for (int i = 0; i < 64; i++) gate[i] = up[i] = down[i] = 0.1f;
    for (int i = 0; i < 8; i++) x[i] = 1.0f;
    moe_layer_desc d = moe_layer_desc_default();
    d.E = 2; d.D = 8; d.I = 4; d.K = 1;
    d.gate.data = gate; d.up.data = up; d.down.data = down;
    moe_layer *L;
    if (moe_layer_create(ctx, &d, &L) != MOE_OK) {
        fprintf(stderr, "moe_layer_create: %s\n", moe_ctx_last_error(ctx));
        return 2;
    }
    size_t ws;
    moe_layer_workspace_size(L, 1, &ws);
    void *buf = malloc(ws ? ws : 1);
    if (moe_layer_forward(L, 1, x, ids, w, out, buf, ws) != MOE_OK) {
        fprintf(stderr, "moe_layer_forward: %s\n", moe_layer_last_error(L));
        return 3;
    }
    free(buf);
    printf("libmoe %s: out[0] = %g\n", moe_version(), out[0]);
    moe_layer_free(L);
    moe_ctx_free(ctx);
    return out[0] > 0 ? 0 : 4;
}
