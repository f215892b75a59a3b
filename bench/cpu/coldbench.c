/*
 * coldbench: the "cpu" backend's forward with weights from memory, for A/B
 * work: Qwen3-30B-A3B expert shape (D 2048, I 768, E 128 unless $E, K 8),
 * gate_up concatenated, 64 rotating random routings (each forward's experts
 * are cold: 340 MB of q4_K rotate through a 32 MB L3), 2 threads; prints the
 * median and 10th percentile per forward and the touched weights' GB/s.
 *   coldbench WTYPE T FORWARDS [TAG...]   (one median per TAG, the tags
 *   interleaved every 8 forwards: patch the library to read a global per tag)
 * Build: cc -O2 -Iinclude bench/cpu/coldbench.c build/libmoe.a -lpthread -lm
 */
#define _GNU_SOURCE
#include "moe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static uint64_t rs=1; static uint32_t rnd(void){rs=rs*6364136223846793005ull+1442695040888963407ull;return rs>>33;}
/* usage: cold WTYPE T NFW tag1 tag2 ...: each tag is written to moe__cpu_ab (if the library has it) */
extern int moe__cpu_ab __attribute__((weak));
int main(int argc,char**argv){
  moe_type wt=MOE_TYPE_Q4_K;
  const char* tn=argv[1];
  moe_type all[]={MOE_TYPE_F32,MOE_TYPE_F16,MOE_TYPE_BF16,MOE_TYPE_Q4_0,MOE_TYPE_Q8_0,MOE_TYPE_Q2_K,MOE_TYPE_Q3_K,MOE_TYPE_Q4_K,MOE_TYPE_Q5_K,MOE_TYPE_Q6_K,MOE_TYPE_MXFP4};
  for(int i=0;i<11;i++) if(!strcasecmp(tn,moe_type_name(all[i]))) wt=all[i];
  int64_t T=atoll(argv[2]), D=2048,I=768,E=getenv("E")?atoll(getenv("E")):128,K=8; int nfw=atoi(argv[3]);
  int npf=argc-4; int pfs[16]; for(int i=0;i<npf;i++) pfs[i]=atoi(argv[4+i]);
  int64_t rbD=moe_type_row_bytes(wt,D), rbI=moe_type_row_bytes(wt,I);
  size_t gb=(size_t)(E*2*I*rbD), db=(size_t)(E*D*rbI);
  char*g=malloc(gb),*dn=malloc(db);
  float*row=malloc(4*4096);
  for(int64_t r=0;r<E*2*I;r++){ if(r<64){for(int c=0;c<D;c++)row[c]=(float)((int)(rnd()%2001)-1000)/30000.f; moe_quantize_row(wt,row,g+r*rbD,D);} else memcpy(g+r*rbD,g+(r%61)*rbD,rbD);}
  for(int64_t r=0;r<E*D;r++){ if(r<64){for(int c=0;c<I;c++)row[c]=(float)((int)(rnd()%2001)-1000)/30000.f; moe_quantize_row(wt,row,dn+r*rbI,I);} else memcpy(dn+r*rbI,dn+(r%61)*rbI,rbI);}
  moe_ctx_params p=moe_ctx_default_params(); p.n_threads=2; moe_ctx*ctx; moe_ctx_create(&p,&ctx);
  moe_layer_desc d=moe_layer_desc_default(); d.E=E;d.D=D;d.I=I;d.K=K;d.layout=MOE_GATE_UP_CONCAT;
  d.gate_up.data=g;d.gate_up.type=wt;d.down.data=dn;d.down.type=wt;d.backend="cpu";
  moe_layer*L; if(moe_layer_create(ctx,&d,&L)){fprintf(stderr,"%s\n",moe_ctx_last_error(ctx));return 1;}
  float*x=malloc(4*T*D),*out=malloc(4*T*D); for(int64_t i=0;i<T*D;i++)x[i]=(float)((int)(rnd()%2001)-1000)/1000.f;
  int NR=64; int32_t*ids=malloc(4*T*K*NR); float*w=malloc(4*T*K*NR);
  for(int b=0;b<NR;b++)for(int64_t t=0;t<T;t++){ int32_t*id=ids+(b*T+t)*K; for(int k=0;k<K;k++){ again: id[k]=rnd()%E; for(int j=0;j<k;j++) if(id[j]==id[k]) goto again; w[(b*T+t)*K+k]=1.0f/K;}}
  size_t wsb; moe_layer_workspace_size(L,T,&wsb); void*ws=malloc(wsb);
  double *tm=malloc(sizeof(double)*nfw*npf);
  int cnt[16]={0};
  for(int it=0;it<nfw*npf;it++){ int pi=(it/8)%npf;  int b=it%NR;
    if(&moe__cpu_ab) moe__cpu_ab=pfs[pi];
    double t0=now();
    if(moe_layer_forward(L,T,x,ids+b*T*K,w+b*T*K,out,ws,wsb)) {fprintf(stderr,"fw %s\n",moe_ctx_last_error(ctx));return 1;}
    double t1=now(); tm[pi*nfw+cnt[pi]++ % nfw]=t1-t0; }
  for(int i=0;i<npf;i++){ int n=cnt[i]<nfw?cnt[i]:nfw; qsort(tm+i*nfw,n,sizeof(double),cmpd); double m=tm[i*nfw+n/2];
    double bytes=0; (void)bytes;
    printf("%s T=%lld tag %5d: median %.1f us  p10 %.1f  ~%.1f GB/s (bytes of the experts at T=1: %.1f MB)\n",tn,(long long)T,pfs[i],m*1e6,tm[i*nfw+n/10]*1e6,(double)K*(2*I*rbD+D*rbI)/m/1e9,(double)K*(2*I*rbD+D*rbI)/1e6);}
  return 0;}
