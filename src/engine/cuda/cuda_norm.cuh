// RMSNorm of the residual stream into the next linear's fp16 input (and, for LLM.int8(), its int8 form), by one
// block: as a kernel of its own (rmsnorm), or as the tail of the residual add before it (norm_tail): the last
// block of that matvec to finish normalizes, so the token has one kernel boundary less on its critical path.
// Included by cuda_kernels.cuh after the warp and dependent-launch helpers.
#pragma once

namespace eco_cuda {

// What one RMSNorm reads and writes. weight NULL: none (a matvec without a norm tail).
struct NormArgs {
    const float *x;      // the residual stream (fp32), written by earlier kernels: read through L2
    const float *weight; // the norm's weights
    __half *out;         // x * rsqrt(mean(x^2) + eps) * weight
    int n;
    float eps;
    int quantize;        // LLM.int8() input: also the int8 form, its absmax and outlier columns (quantize_with_absmax)
    float threshold;
    int8_t *xq;
    float *x_absmax;
    int *outliers, *n_outliers;
    int max_outliers;
    float *zero;         // floats a kernel before has finished with (the atomic qkv sums attention read), or NULL
    int zero_n;
    int *arrivals;       // norm tail: the matvec's blocks done so far (its last block resets it)
};

// The second half of LLM.int8()'s per-token quantization, by every thread of one block, given the absmax of the
// inliers: outlier columns (|x| >= threshold) are listed (*count, in shared memory, starts at 0) and zeroed in
// xq; the rest are scaled by 127/absmax and rounded half to even. Shared by quantize_activations and the
// quantizing RMSNorm, so both give the same bytes.
// x is not __restrict__: the quantizing RMSNorm reads back what it wrote in the same kernel, which the
// read-only (non-coherent) path must not serve.
__device__ __forceinline__ void quantize_with_absmax(const __half *x, int n, float absmax, float threshold,
                                                     int8_t *__restrict__ xq, int *count, float *__restrict__ x_absmax,
                                                     int *__restrict__ outliers, int *__restrict__ n_outliers, int max_outliers)
{
    float inv = absmax > 0.f ? 127.f / absmax : 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = __half2float(x[i]);
        if (threshold > 0.f && fabsf(v) >= threshold) {
            int k = atomicAdd(count, 1);
            if (k < max_outliers) outliers[k] = i;
            xq[i] = 0;
        } else {
            xq[i] = (int8_t)__float2int_rn(v * inv);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        *x_absmax = absmax;
        *n_outliers = *count < max_outliers ? *count : max_outliers;
    }
}

// The first Cached float4 of the weights this thread normalizes with (the kernel loads them before its wait).
template <int Threads, int Cached> __device__ __forceinline__ void norm_weights(const NormArgs &a, float4 (&g)[Cached])
{
    const float4 *w4 = reinterpret_cast<const float4 *>(a.weight);
#pragma unroll
    for (int k = 0; k < Cached; k++) {
        int i = threadIdx.x + k * Threads;
        if (i < a.n / 4) g[k] = __ldg(w4 + i);
    }
}

// The norm by a block of Threads threads, after x is final. Up to Threads x Cached float4 of x stay in registers
// for the second pass; the rest is read again (from L2).
template <bool Quantize, int Threads, int Cached>
__device__ __forceinline__ void rmsnorm_block(const NormArgs &a, const float4 (&g)[Cached])
{
    __shared__ float red[Threads / kWarp], red_max[Threads / kWarp];
    __shared__ int count;
    if (Quantize && threadIdx.x == 0) count = 0;
    const float *x = a.x;
    const float4 *x4 = reinterpret_cast<const float4 *>(x), *w4 = reinterpret_cast<const float4 *>(a.weight);
    const int n = a.n, n4 = n / 4;
    for (int i = threadIdx.x; i < a.zero_n; i += Threads) a.zero[i] = 0.f;
    float4 v[Cached];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < Cached; k++) {
        int i = threadIdx.x + k * Threads;
        if (i < n4) {
            v[k] = __ldcg(x4 + i);
            s += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
        }
    }
    for (int i = threadIdx.x + Cached * Threads; i < n4; i += Threads) {
        float4 t = __ldcg(x4 + i);
        s += t.x * t.x + t.y * t.y + t.z * t.z + t.w * t.w;
    }
    for (int i = 4 * n4 + threadIdx.x; i < n; i += Threads) {
        float t = __ldcg(x + i);
        s += t * t;
    }
    s = warp_sum(s);
    if (threadIdx.x % kWarp == 0) red[threadIdx.x / kWarp] = s;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < Threads / kWarp; w++) total += red[w];
    float r = rsqrtf(total / n + a.eps);
    float m = 0.f; // Quantize: largest |out| below the outlier threshold
    const float threshold = a.threshold;
    auto inlier = [threshold](float e) { return !(threshold > 0.f && e >= threshold); };
    auto emit = [&](int i, float4 xv, float4 gv) {
        __half2 lo = __floats2half2_rn(xv.x * r * gv.x, xv.y * r * gv.y), hi = __floats2half2_rn(xv.z * r * gv.z, xv.w * r * gv.w);
        uint2 packed = make_uint2(*reinterpret_cast<unsigned *>(&lo), *reinterpret_cast<unsigned *>(&hi));
        reinterpret_cast<uint2 *>(a.out)[i] = packed;
        if constexpr (Quantize) {
            float2 p = __half22float2(lo), q = __half22float2(hi);
            float e[4] = {fabsf(p.x), fabsf(p.y), fabsf(q.x), fabsf(q.y)};
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (inlier(e[k])) m = fmaxf(m, e[k]);
        }
    };
#pragma unroll
    for (int k = 0; k < Cached; k++) {
        int i = threadIdx.x + k * Threads;
        if (i < n4) emit(i, v[k], g[k]);
    }
    for (int i = threadIdx.x + Cached * Threads; i < n4; i += Threads) emit(i, __ldcg(x4 + i), __ldg(w4 + i));
    for (int i = 4 * n4 + threadIdx.x; i < n; i += Threads) {
        __half h = __float2half(__ldcg(x + i) * r * a.weight[i]);
        a.out[i] = h;
        float e = fabsf(__half2float(h));
        if (Quantize && inlier(e)) m = fmaxf(m, e);
    }
    if constexpr (Quantize) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (threadIdx.x % kWarp == 0) red_max[threadIdx.x / kWarp] = m;
        __syncthreads();
        float absmax = 0.f;
#pragma unroll
        for (int w = 0; w < Threads / kWarp; w++) absmax = fmaxf(absmax, red_max[w]);
        // The barrier above made every thread's fp16 output visible to the block.
        quantize_with_absmax(a.out, n, absmax, threshold, a.xq, &count, a.x_absmax, a.outliers, a.n_outliers, a.max_outliers);
    }
}

// out = fp16(x * rsqrt(mean(x^2) + eps) * weight), one block. It sits between two matvecs on the critical
// path, so it is kept short: 16-byte loads, 8 warps, one barrier (every thread adds the 8 warp sums), the
// weights loaded before the dependency wait and x read once.
// With Quantize (LLM.int8() inputs of qkv and gate_up), the same block also quantizes its fp16 output as
// quantize_activations does (same outliers, absmax and rounding): one kernel instead of two on the critical
// path, and no second pass over x from another block.
constexpr int kNormThreads = 256, kNormCached = 6; // hidden sizes up to 6144 are read once (8 spills)

template <bool Quantize> __global__ void __launch_bounds__(kNormThreads) rmsnorm(const NormArgs a)
{
    grid_dependents_launch();
    float4 g[kNormCached];
    norm_weights<kNormThreads, kNormCached>(a, g);
    grid_dependency_wait();
    rmsnorm_block<Quantize, kNormThreads, kNormCached>(a, g);
}

// The end of a residual-add matvec that carries the next RMSNorm (its kernels' Tail instantiations; the others
// have no such code, so their registers are as before): every block, whatever its
// share, arrives once its writes to x are made visible, and the last to arrive normalizes the finished x with
// all its threads. The kernel after it (the next linear) waits for this grid to complete, norm included.
// Threads: the kernel's block size.
template <int Threads> __device__ __forceinline__ void norm_tail(const NormArgs &a)
{
    if (!a.weight) return;
    __shared__ int last;
    grid_dependency_wait(); // a block with no share returned before its wait: x must not be read ahead of it
    __threadfence();        // this thread's adds into x, before the block's arrival
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(a.arrivals, 1) == (int)(gridDim.x * gridDim.y * gridDim.z) - 1;
    __syncthreads();
    if (!last) return;
    __threadfence(); // every other block's adds, seen through its arrival
    if (threadIdx.x == 0) *a.arrivals = 0; // for the next launch, which counts only after this grid completes
    constexpr int Cached = 2; // registers a matvec spares; the rest of x is read again from L2
    float4 g[Cached];
    norm_weights<Threads, Cached>(a, g);
    if (a.quantize) rmsnorm_block<true, Threads, Cached>(a, g);
    else rmsnorm_block<false, Threads, Cached>(a, g);
}

} // namespace eco_cuda
