/* Extras of the CUDA backend (src/engine/cuda) beyond the eco_backend table. Declared weak: in a build
 * without nvcc they are NULL, so callers test `if (eco_cuda_greedy_step)` before use. */
#ifndef ECO_CUDA_H
#define ECO_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"
#include "eco/model.h"
#include "eco/quant.h"

/* Reference-stack mode for engines created afterwards: launches one by one (no CUDA graph) and the host
 * syncs the reference library makes (LLM.int8() outlier detection), to separate format cost from kernel design. */
void eco_cuda_set_reference_stack(bool on) __attribute__((weak));
bool eco_cuda_reference_stack_requested(void) __attribute__((weak));
/* One token with the argmax on the device: only the next token id crosses PCIe. `state` is the backend state. */
eco_err eco_cuda_greedy_step(void *state, int32_t token, int pos, int32_t *next) __attribute__((weak));
eco_err eco_cuda_sync(void *state) __attribute__((weak));
/* Sustained streaming read bandwidth of device 0 (8 GiB buffer, 16-byte evict-first loads). */
eco_err eco_cuda_stream_bandwidth(double seconds, double *gb_per_s) __attribute__((weak));
eco_err eco_cuda_device_name(char *buf, size_t cap) __attribute__((weak));
/* The kernel design engines created now would use (graph, PDL, fusion, fp8 decode, matvec shapes), for records. */
void eco_cuda_design(char *buf, size_t cap) __attribute__((weak));
/* Times one matvec kernel shape (bench_matvec) on pseudo-random weights of a [rows x cols] linear in format
 * `precision` (eco_precision): rows_per_warp x unroll as in the engine's ECO_CUDA_MATVEC="R,U,S", `splits`
 * column slices (atomic residual add when > 1). Weights rotate over > 1 GiB of copies (far beyond the L2);
 * launches are graph-replayed with programmatic dependent launch, as in a token. Best of 5 replays. */
eco_err eco_cuda_matvec_bench(int precision, int rows, int cols, int rows_per_warp, int unroll, int splits, bool fp8_hw,
                              double *us_per_call, double *gb_per_s) __attribute__((weak));

/* y[rows] = W x on the device with the kernels an engine created now would use (format, decoder, shape and
 * splits from the environment as in an engine), for tests of the kernels against eco_qmatvec on chosen inputs.
 * x is rounded to fp16 as the engine's activations are. */
eco_err eco_cuda_qmatvec(const eco_qweight *q, const float *x, float *y) __attribute__((weak));

/* How the engine, with this environment, would sum model c's qkv at `precision` (ECO_PREC_NF4_DQ for nf4 with
 * double quant), on the host (no device needed): *atomic 0: qkv's own epilogue (bias, RoPE, KV write); 1: atomic
 * sums, bias/RoPE/KV write in the attention kernel; 2: atomic sums, those in a kernel of their own. An
 * environment that does not parse gives its error. */
eco_err eco_cuda_qkv_summing(const eco_model_config *c, eco_precision precision, int *atomic) __attribute__((weak));

/* Whether the engine, with this environment, would sum model c's nf4 gate_up by atomics and have down make the
 * SwiGLU (ECO_CUDA_SWIGLU_ATOMIC) at `precision` with nf4 blocks of nf4_blocksize: *on 1 or 0. Needs the device
 * (down's share of x a warp depends on how many warps it holds): ECO_EUNSUPPORTED without one. */
eco_err eco_cuda_swiglu_by_down(const eco_model_config *c, eco_precision precision, int nf4_blocksize, int *on) __attribute__((weak));

/* Checks, on the host (no device needed), the nf4 row-per-lane layout of a linear of `rows` x `cols` and
 * its split over `warps` warps: every row in exactly one slot, the two rows of a unit in lanes l and l + 16
 * (pairing 0: consecutive rows; 1: SwiGLU, gate row i and up row i + rows/2; 2: RoPE, the two halves of a
 * head of head_dim), every chunk in exactly one warp's share, shares in whole steps of at least min_steps,
 * no group split between more warps than its deposit slots. ECO_ESTATE with the first violation. */
eco_err eco_cuda_nf4_rows_layout_check(int rows, int cols, int pairing, int head_dim, long warps, int min_steps) __attribute__((weak));

/* The filled shares (ECO_CUDA_NF4_FILL) of a residual nf4 linear of `rows` x `cols` on the row-per-lane decoder's
 * default steps (16-warp blocks, pairs of one-chunk steps) over `blocks` blocks, `skew` blocks skewed: sizes[k] chunks
 * a warp for the warps of counts[k] blocks, k = 0..2, in block order; *filled 0 where the chunks do not fill every
 * warp (even shares then, counts[0] = blocks of sizes[0]). On the host. ECO_EINVAL for a bad shape. */
eco_err eco_cuda_nf4_rows_fill_plan(int rows, int cols, int blocks, int skew, int *filled, long counts[3], long sizes[3]) __attribute__((weak));

#endif
