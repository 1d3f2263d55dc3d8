// Device kernels of the CUDA backend: one warp-per-row matrix-vector skeleton with a dequant path per
// format, and the small per-token kernels (embedding, RMSNorm, RoPE + KV write, attention, SwiGLU).
// Residual stream, norms, softmax and every accumulator are fp32; matvec inputs are fp16 as in the
// reference stack (shared/research/anchor-kernels.md, Recommendations).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

namespace eco_cuda {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8; // 8 warps of 32 = 256 threads, one output row per warp

// Everything a linear layer needs on the device, in the layout of eco_qweight (include/eco/quant.h).
struct DeviceLinear {
    int format;                 // eco_precision
    int rows, cols;
    const void *w;              // fp16 | int8 | packed nf4 (first element in the high nibble) | e4m3 bytes
    const float *row_scale;     // int8, int8-mixed, fp8
    const float *absmax;        // nf4 (fp32 per block)
    const uint8_t *absmax_q;    // nf4-dq codes
    const float *absmax_q_scale;// nf4-dq, one per 256 blocks
    float absmax_offset;        // nf4-dq
    int blocksize;              // nf4
};

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ int warp_sum_int(int v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Weights are streamed once per token: bypass L1 and mark them evict-first (ld.global.cs).
__device__ __forceinline__ uint4 load_stream(const void *p) { return __ldcs(reinterpret_cast<const uint4 *>(p)); }

__device__ __forceinline__ float dot8_h(uint4 w, const __half *x)
{
    const __half2 *wh = reinterpret_cast<const __half2 *>(&w);
    const __half2 *xh = reinterpret_cast<const __half2 *>(x);
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 a = __half22float2(wh[i]), b = __half22float2(xh[i]);
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
    return acc;
}

// y[row] (+)= W[row,:] . x for fp16 weights. x: fp16, 16-byte aligned; cols % 8 == 0.
// mode: 0 store, 1 add to y (fused residual). bias may be null.
template <int Unroll>
__global__ void matvec_f16(const __half *__restrict__ w, const __half *__restrict__ x, float *__restrict__ y,
                           int rows, int cols, int mode)
{
    int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
    int lane = threadIdx.x % kWarp;
    if (row >= rows) return;
    const __half *wr = w + (size_t)row * cols;
    float acc = 0.f;
    int step = kWarp * 8;
    int c = lane * 8;
    for (; c + (Unroll - 1) * step < cols; c += Unroll * step) {
        uint4 v[Unroll];
#pragma unroll
        for (int u = 0; u < Unroll; u++) v[u] = load_stream(wr + c + u * step);
#pragma unroll
        for (int u = 0; u < Unroll; u++) acc += dot8_h(v[u], x + c + u * step);
    }
    for (; c < cols; c += step) acc += dot8_h(load_stream(wr + c), x + c);
    acc = warp_sum(acc);
    if (lane == 0) y[row] = mode ? y[row] + acc : acc;
}

// int8 weights (W8A16): 16 weights per 16-byte load, row scale applied once at the end.
__global__ void matvec_i8(const int8_t *__restrict__ w, const float *__restrict__ scale, const __half *__restrict__ x,
                          float *__restrict__ y, int rows, int cols, int mode)
{
    int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
    int lane = threadIdx.x % kWarp;
    if (row >= rows) return;
    const int8_t *wr = w + (size_t)row * cols;
    float acc = 0.f;
    for (int c = lane * 16; c < cols; c += kWarp * 16) {
        uint4 v = load_stream(wr + c);
        const int8_t *q = reinterpret_cast<const int8_t *>(&v);
        const __half2 *xh = reinterpret_cast<const __half2 *>(x + c);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float2 b = __half22float2(xh[i]);
            acc = fmaf((float)q[2 * i], b.x, acc);
            acc = fmaf((float)q[2 * i + 1], b.y, acc);
        }
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        float r = acc * scale[row];
        y[row] = mode ? y[row] + r : r;
    }
}

// fp8 e4m3 weights through the hardware e4m3 -> fp16 conversion (sm_89+), per-row scale.
__global__ void matvec_fp8(const uint8_t *__restrict__ w, const float *__restrict__ scale, const __half *__restrict__ x,
                           float *__restrict__ y, int rows, int cols, int mode)
{
    int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
    int lane = threadIdx.x % kWarp;
    if (row >= rows) return;
    const uint8_t *wr = w + (size_t)row * cols;
    float acc = 0.f;
    for (int c = lane * 16; c < cols; c += kWarp * 16) {
        uint4 v = load_stream(wr + c);
        const __nv_fp8x2_storage_t *p = reinterpret_cast<const __nv_fp8x2_storage_t *>(&v);
        const __half2 *xh = reinterpret_cast<const __half2 *>(x + c);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(p[i], __NV_E4M3);
            float2 a = __half22float2(*reinterpret_cast<__half2 *>(&raw));
            float2 b = __half22float2(xh[i]);
            acc = fmaf(a.x, b.x, acc);
            acc = fmaf(a.y, b.y, acc);
        }
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        float r = acc * scale[row];
        y[row] = mode ? y[row] + r : r;
    }
}

__constant__ float c_nf4[16];
__constant__ float c_dynamic_map[256];

// NF4: 32 weights per 16-byte load (two nibbles a byte, first element high). Blocks never straddle rows
// because every supported shape has cols % blocksize == 0 (checked on the host).
template <bool DoubleQuant>
__global__ void matvec_nf4(const uint8_t *__restrict__ w, const float *__restrict__ absmax,
                           const uint8_t *__restrict__ absmax_q, const float *__restrict__ absmax_q_scale,
                           float absmax_offset, int blocksize, const __half *__restrict__ x, float *__restrict__ y,
                           int rows, int cols, int mode)
{
    __shared__ float lut[16];
    if (threadIdx.x < 16) lut[threadIdx.x] = c_nf4[threadIdx.x];
    __syncthreads();
    int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
    int lane = threadIdx.x % kWarp;
    if (row >= rows) return;
    size_t base = (size_t)row * cols; // element index of the row start
    const uint8_t *wr = w + base / 2;
    float acc = 0.f;
    for (int c = lane * 32; c < cols; c += kWarp * 32) {
        uint4 v = load_stream(wr + c / 2);
        size_t block = (base + c) / blocksize;
        float am;
        if (DoubleQuant) am = c_dynamic_map[absmax_q[block]] * absmax_q_scale[block / 256] + absmax_offset;
        else am = __ldg(absmax + block);
        const uint8_t *b = reinterpret_cast<const uint8_t *>(&v);
        const __half2 *xh = reinterpret_cast<const __half2 *>(x + c);
        float part = 0.f;
#pragma unroll
        for (int i = 0; i < 16; i++) {
            float2 xx = __half22float2(xh[i]);
            part = fmaf(lut[b[i] >> 4], xx.x, part);
            part = fmaf(lut[b[i] & 15], xx.y, part);
        }
        // 32 consecutive weights lie in one block when blocksize >= 32 and 32 | blocksize.
        acc = fmaf(part, am, acc);
    }
    acc = warp_sum(acc);
    if (lane == 0) y[row] = mode ? y[row] + acc : acc;
}

// LLM.int8(): the non-outlier activation columns quantized per token to int8 (xq), outlier columns listed in
// `outliers`; y = (sum q*xq) * (absmax_x/127) * row_scale  +  sum_{outliers} fp16(q*row_scale) * x.
__global__ void matvec_i8_mixed(const int8_t *__restrict__ w, const float *__restrict__ scale,
                                const int8_t *__restrict__ xq, const float *__restrict__ x_absmax,
                                const int *__restrict__ outliers, const int *__restrict__ n_outliers,
                                const __half *__restrict__ x, float *__restrict__ y, int rows, int cols, int mode)
{
    int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp;
    int lane = threadIdx.x % kWarp;
    if (row >= rows) return;
    const int8_t *wr = w + (size_t)row * cols;
    int acc = 0;
    for (int c = lane * 16; c < cols; c += kWarp * 16) {
        uint4 v = load_stream(wr + c);
        uint4 a = *reinterpret_cast<const uint4 *>(xq + c);
        acc = __dp4a((int)v.x, (int)a.x, acc);
        acc = __dp4a((int)v.y, (int)a.y, acc);
        acc = __dp4a((int)v.z, (int)a.z, acc);
        acc = __dp4a((int)v.w, (int)a.w, acc);
    }
    acc = warp_sum_int(acc);
    float s = scale[row];
    float out = 0.f;
    int n = *n_outliers;
    for (int i = lane; i < n; i += kWarp) {
        int j = outliers[i];
        float wdq = __half2float(__float2half((float)wr[j] * s));
        out = fmaf(wdq, __half2float(x[j]), out);
    }
    out = warp_sum(out);
    if (lane == 0) {
        float r = (float)acc * (*x_absmax / 127.f) * s + out;
        y[row] = mode ? y[row] + r : r;
    }
}

// Per-token activation quantization for LLM.int8(): one block. Outlier columns (|x| >= threshold) are
// listed and zeroed in xq; the rest are scaled by 127/absmax and rounded half to even.
__global__ void quantize_activations(const __half *__restrict__ x, int n, float threshold, int8_t *__restrict__ xq,
                                     float *__restrict__ x_absmax, int *__restrict__ outliers,
                                     int *__restrict__ n_outliers, int max_outliers)
{
    __shared__ float red[32];
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    float m = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = fabsf(__half2float(x[i]));
        if (threshold > 0.f && v >= threshold) continue;
        m = fmaxf(m, v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (threadIdx.x == 0) red[0] = v;
    }
    __syncthreads();
    float absmax = red[0];
    float inv = absmax > 0.f ? 127.f / absmax : 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = __half2float(x[i]);
        if (threshold > 0.f && fabsf(v) >= threshold) {
            int k = atomicAdd(&count, 1);
            if (k < max_outliers) outliers[k] = i;
            xq[i] = 0;
        } else {
            xq[i] = (int8_t)__float2int_rn(v * inv);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        *x_absmax = absmax;
        *n_outliers = count < max_outliers ? count : max_outliers;
    }
}

// x[hidden] = fp32(embedding row of *token) (embeddings stay 16-bit).
__global__ void embed(const __half *__restrict__ table, const int *__restrict__ token, float *__restrict__ x, int hidden)
{
    const __half *row = table + (size_t)(*token) * hidden;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < hidden; i += gridDim.x * blockDim.x) x[i] = __half2float(row[i]);
}

// out = fp16(x * rsqrt(mean(x^2) + eps) * weight), one block.
__global__ void rmsnorm(const float *__restrict__ x, const float *__restrict__ weight, __half *__restrict__ out, int n,
                        float eps)
{
    __shared__ float red[32];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i] * x[i];
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
        v = warp_sum(v);
        if (threadIdx.x == 0) red[0] = v;
    }
    __syncthreads();
    float r = rsqrtf(red[0] / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = __float2half(x[i] * r * weight[i]);
}

// qkv[q | k | v] (fp32) += bias; rotate-half RoPE on q and k at position *pos; k, v -> fp16 cache rows.
__global__ void rope_kv(float *__restrict__ qkv, const float *__restrict__ bias, const float *__restrict__ inv_freq,
                        const int *__restrict__ pos_ptr, __half *__restrict__ k_cache, __half *__restrict__ v_cache,
                        int heads, int kv_heads, int head_dim)
{
    int pos = *pos_ptr;
    int half_dim = head_dim / 2;
    int q_dim = heads * head_dim, kv_dim = kv_heads * head_dim;
    int total_pairs = (heads + kv_heads) * half_dim;
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < total_pairs; p += gridDim.x * blockDim.x) {
        int h = p / half_dim, i = p % half_dim;
        int off = h < heads ? h * head_dim : q_dim + (h - heads) * head_dim;
        float a = qkv[off + i], b = qkv[off + i + half_dim];
        if (bias) { a += bias[off + i]; b += bias[off + i + half_dim]; }
        float sn, cs;
        sincosf((float)pos * inv_freq[i], &sn, &cs);
        float ra = a * cs - b * sn, rb = b * cs + a * sn;
        qkv[off + i] = ra;
        qkv[off + i + half_dim] = rb;
        if (h >= heads) {
            size_t row = (size_t)pos * kv_dim + (off - q_dim);
            k_cache[row + i] = __float2half(ra);
            k_cache[row + i + half_dim] = __float2half(rb);
        }
    }
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < kv_dim; j += gridDim.x * blockDim.x) {
        float v = qkv[q_dim + kv_dim + j] + (bias ? bias[q_dim + kv_dim + j] : 0.f);
        v_cache[(size_t)pos * kv_dim + j] = __float2half(v);
    }
}

// One block per query head: scores over positions [start, pos], softmax, weighted sum of V. Output fp16
// (it feeds o_proj). Scores live in dynamic shared memory (max_seq floats).
__global__ void attention(const float *__restrict__ qkv, const __half *__restrict__ k_cache,
                          const __half *__restrict__ v_cache, const int *__restrict__ pos_ptr, __half *__restrict__ out,
                          int heads, int kv_heads, int head_dim, int window)
{
    extern __shared__ float scores[];
    __shared__ float red[32];
    int h = blockIdx.x, pos = *pos_ptr;
    int kvh = h / (heads / kv_heads), kv_dim = kv_heads * head_dim;
    int start = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
    const float *q = qkv + h * head_dim;
    float scale = rsqrtf((float)head_dim);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int t = start + warp; t <= pos; t += warps) {
        const __half *k = k_cache + (size_t)t * kv_dim + kvh * head_dim;
        float s = 0.f;
        for (int d = lane; d < head_dim; d += 32) s += q[d] * __half2float(k[d]);
        s = warp_sum(s);
        if (lane == 0) scores[t - start] = s * scale;
    }
    __syncthreads();
    int n = pos + 1 - start;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, scores[i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = -INFINITY;
    for (int i = 0; i < warps; i++) m = fmaxf(m, red[i]);
    __syncthreads();
    float sum = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float e = __expf(scores[i] - m);
        scores[i] = e;
        sum += e;
    }
    sum = warp_sum(sum);
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    sum = 0.f;
    for (int i = 0; i < warps; i++) sum += red[i];
    float inv = 1.f / sum;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float acc = 0.f;
        for (int t = 0; t < n; t++) acc += scores[t] * __half2float(v_cache[(size_t)(t + start) * kv_dim + kvh * head_dim + d]);
        out[h * head_dim + d] = __float2half(acc * inv);
    }
}

// gate_up = [gate | up] (fp32) -> fp16(silu(gate) * up)
__global__ void swiglu(const float *__restrict__ gate_up, __half *__restrict__ out, int inter)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < inter; i += gridDim.x * blockDim.x) {
        float g = gate_up[i], u = gate_up[inter + i];
        out[i] = __float2half(g / (1.f + __expf(-g)) * u);
    }
}

// Greedy sampling on the device: index of the largest logit, ties to the lowest index (torch.argmax).
__global__ void argmax(const float *__restrict__ logits, int n, int *__restrict__ out)
{
    __shared__ float best_v[32];
    __shared__ int best_i[32];
    float v = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float l = logits[i];
        if (l > v || (l == v && i < idx)) { v = l; idx = i; }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ov > v || (ov == v && oi < idx)) { v = ov; idx = oi; }
    }
    if (threadIdx.x % 32 == 0) { best_v[threadIdx.x / 32] = v; best_i[threadIdx.x / 32] = idx; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)blockDim.x / 32; w++)
            if (best_v[w] > v || (best_v[w] == v && best_i[w] < idx)) { v = best_v[w]; idx = best_i[w]; }
        *out = idx;
    }
}

// Streaming read of n 16-byte words (measured bandwidth for the roofline); the sum defeats dead-code removal.
__global__ void stream_read(const uint4 *__restrict__ p, size_t n, unsigned *__restrict__ sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

} // namespace eco_cuda
