/*
 * patternprobe: the read pattern of a T = 1 kernel without its arithmetic
 * (session 7, src/cpu/NOTES.md). Two threads read CHUNK bytes (half each)
 * per repetition from a 1 GB buffer (moving on each time, so from memory);
 * the configurations given are interleaved per repetition (the VM's bandwidth
 * drifts within seconds) and each reports its median GB/s.
 *   patternprobe CHUNK REPS CFG...      CFG = MODE[:NR:SPAN:PF:RB:ST]
 *   MODE 0   plain sequential 64-byte loads (no software prefetch)
 *   MODE 10  NR rows of RB bytes read together, ST bytes of each row in turn
 *            (68 / 816: a Q8_0 down row of 768; 2176: a gate/up row of 2048)
 *   MODE 11  the same with SPAN bytes of prefetch per step, at the same offset
 *            PF bytes (whole rows, at least NR) ahead, as kernels.inc does
 * Defaults NR 4, SPAN 256, PF 4096, RB 816, ST 68 (the pre-session-7 Q8_0 tile).
 * Build: cc -O2 -mavx512f -mavx512bw bench/cpu/patternprobe.c -lpthread -o patternprobe
 * Example (session 7): patternprobe 41943040 150 0 11:4:256 11:1:256 11:4:256:4096:2176 11:1:128:4096:2176
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>
#include <immintrin.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
typedef struct{int mode,nr,span; size_t pf,rb,st;} cfg;
typedef struct{const char*p;size_t n;cfg c;uint64_t s; pthread_barrier_t*b;} arg;
static void*wk(void*a_){arg*a=a_; pthread_barrier_wait(a->b); cfg C=a->c; __m512i s=_mm512_setzero_si512();
 if(C.mode==0){const __m512i*p=(const __m512i*)a->p; size_t n=a->n/64; for(size_t i=0;i<n;i++) s=_mm512_add_epi64(s,_mm512_load_si512(p+i));}
 else { size_t RB=C.rb; size_t pd=(C.pf+RB-1)/RB; if(pd<(size_t)C.nr)pd=C.nr; pd*=RB; const char*c0=a->p; size_t nrow=a->n/RB;
   for(size_t r0=0;r0+C.nr<=nrow;r0+=C.nr){ const char*w=c0+r0*RB; for(size_t c=0;c<RB;c+=C.st){ for(int r=0;r<C.nr;r++){ const char*q=w+r*RB+c; s=_mm512_add_epi64(s,_mm512_loadu_si512(q));
      if(C.mode>=11) for(int k=0;k<C.span;k+=64) __builtin_prefetch(q+pd+k,0,3);} } } }
 a->s=_mm512_reduce_add_epi64(s); pthread_barrier_wait(a->b); return NULL;}
static int cmp(const void*x,const void*y){double u=*(double*)x,v=*(double*)y;return u<v?-1:u>v;}
int main(int argc,char**argv){ size_t tot=(size_t)1<<30; char*buf=aligned_alloc(64,tot); memset(buf,1,tot);
 size_t chunk=(size_t)atoll(argv[1]); int reps=atoi(argv[2]); int nc=argc-3; cfg cs[16]; 
 for(int i=0;i<nc;i++){cfg c={0,4,256,4096,816,68}; sscanf(argv[3+i],"%d:%d:%d:%zu:%zu:%zu",&c.mode,&c.nr,&c.span,&c.pf,&c.rb,&c.st); cs[i]=c;}
 pthread_barrier_t b; pthread_barrier_init(&b,NULL,2); double *ts=malloc(sizeof(double)*reps*nc); size_t off=0; pthread_t th; arg a[2];
 for(int r=0;r<reps;r++) for(int i=0;i<nc;i++){ if(off+chunk>tot) off=0; a[0]=(arg){buf+off,chunk/2,cs[i],0,&b}; a[1]=(arg){buf+off+chunk/2,chunk/2,cs[i],0,&b}; off+=chunk;
  pthread_create(&th,NULL,wk,&a[1]); double t0=now(); wk(&a[0]); double t1=now(); pthread_join(th,NULL); ts[i*reps+r]=t1-t0; }
 for(int i=0;i<nc;i++){ qsort(ts+i*reps,reps,8,cmp); printf("%-24s median %.1f GB/s  p10-p90 %.1f-%.1f\n",argv[3+i],chunk/ts[i*reps+reps/2]/1e9,chunk/ts[i*reps+reps*9/10]/1e9,chunk/ts[i*reps+reps/10]/1e9);}
 return 0;}
