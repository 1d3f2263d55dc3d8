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
constexpr int kRowsPerBlock = 8; // rows per thread block of every matvec kernel

__constant__ float c_nf4[16];
__constant__ float c_dynamic_map[256];

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

// ---- The matrix-vector skeleton ----
// A block of kWarpsPerBlock warps; each warp owns kRowsPerWarp consecutive rows, so every x fragment a lane
// loads (and converts to fp32 once) serves several weight rows. Each lane keeps Unroll x kRowsPerWarp
// independent 16-byte streaming loads in flight. Decoders avoid the slow int->float conversion unit:
// int8 through the 2^23 float trick, e4m3 by moving its bits into an fp32 with the 2^120 bias fix folded
// into the row scale, nf4 through a 256-entry byte -> (float, float) table in shared memory.
constexpr int kWarpsPerBlock = 4;
constexpr int kRowsPerWarp = 2;
static_assert(kRowsPerBlock == kWarpsPerBlock * kRowsPerWarp, "rows per block");

enum WeightKind { W_F16 = 0, W_I8 = 1, W_FP8 = 2, W_NF4 = 3, W_FP8_HW = 4 };

template <int K> struct Elems;                       // weights per 16-byte load
template <> struct Elems<W_F16> { static constexpr int n = 8; };
template <> struct Elems<W_I8> { static constexpr int n = 16; };
template <> struct Elems<W_FP8> { static constexpr int n = 16; };
template <> struct Elems<W_NF4> { static constexpr int n = 32; };
template <> struct Elems<W_FP8_HW> { static constexpr int n = 16; };

template <int N> __device__ __forceinline__ void load_x(const __half *__restrict__ x, float (&xf)[N])
{
#pragma unroll
    for (int i = 0; i < N / 8; i++) {
        uint4 v = __ldg(reinterpret_cast<const uint4 *>(x) + i);
        const __half2 *h = reinterpret_cast<const __half2 *>(&v);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 f = __half22float2(h[j]);
            xf[8 * i + 2 * j] = f.x;
            xf[8 * i + 2 * j + 1] = f.y;
        }
    }
}

// int8 byte k of word v as an exact float: the byte (offset by 128) becomes the low mantissa bits of 2^23.
__device__ __forceinline__ float i8_at(unsigned v_offset, int k)
{
    return __int_as_float(__byte_perm(v_offset, 0x4B000000u, 0x7540 + k)) - 8388736.f;
}

// e4m3 byte k of word v as fp32 bits with exponent bias 127 instead of 7 (value * 2^-120); sign kept.
__device__ __forceinline__ float e4m3_scaled_at(unsigned v, int k)
{
    unsigned b = (v >> (8 * k)) & 0xFFu;
    return __int_as_float(((b & 0x7Fu) << 20) | ((b & 0x80u) << 24));
}

template <int K> __device__ __forceinline__ float dot16(uint4 w, const float *xf, const float2 *lut)
{
    float acc = 0.f;
    const unsigned *u = reinterpret_cast<const unsigned *>(&w);
    if (K == W_F16) {
        const __half2 *h = reinterpret_cast<const __half2 *>(&w);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float2 f = __half22float2(h[i]);
            acc = fmaf(f.x, xf[2 * i], acc);
            acc = fmaf(f.y, xf[2 * i + 1], acc);
        }
    } else if (K == W_I8) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            unsigned v = u[i] ^ 0x80808080u;
#pragma unroll
            for (int k = 0; k < 4; k++) acc = fmaf(i8_at(v, k), xf[4 * i + k], acc);
        }
    } else if (K == W_FP8_HW) { // the hardware e4m3 -> fp16 conversion (sm_89+), two weights per instruction
        const __nv_fp8x2_storage_t *p = reinterpret_cast<const __nv_fp8x2_storage_t *>(&w);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(p[i], __NV_E4M3);
            float2 f = __half22float2(*reinterpret_cast<__half2 *>(&raw));
            acc = fmaf(f.x, xf[2 * i], acc);
            acc = fmaf(f.y, xf[2 * i + 1], acc);
        }
    } else if (K == W_FP8) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int k = 0; k < 4; k++) acc = fmaf(e4m3_scaled_at(u[i], k), xf[4 * i + k], acc);
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float2 p = lut[(u[i] >> (8 * k)) & 0xFFu]; // high nibble = first element
                acc = fmaf(p.x, xf[8 * i + 2 * k], acc);
                acc = fmaf(p.y, xf[8 * i + 2 * k + 1], acc);
            }
    }
    return acc;
}

// y[row] (+)= W[row,:] . x. mode 0 stores, 1 adds (fused residual). For nf4 the per-block absmax multiplies
// each 32-weight partial sum (a 16-byte chunk never straddles a block: blocksize % 32 == 0, checked on the host).
template <int K, bool DoubleQuant, int Unroll>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
matvec(const uint8_t *__restrict__ w, const float *__restrict__ row_scale, const float *__restrict__ absmax,
       const uint8_t *__restrict__ absmax_q, const float *__restrict__ absmax_q_scale, float absmax_offset, int blocksize,
       const __half *__restrict__ x, float *__restrict__ y, int rows, int cols, int mode)
{
    __shared__ float2 lut[K == W_NF4 ? 256 : 1];
    if (K == W_NF4) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x) lut[i] = make_float2(c_nf4[i >> 4], c_nf4[i & 15]);
        __syncthreads();
    }
    constexpr int E = Elems<K>::n;
    constexpr int kRowBytesDiv = K == W_F16 ? 1 : 0; // fp16 rows hold 2 bytes per weight
    int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    int row0 = (blockIdx.x * kWarpsPerBlock + warp) * kRowsPerWarp;
    if (row0 >= rows) return;
    size_t row_bytes = K == W_NF4 ? (size_t)cols / 2 : (size_t)cols << kRowBytesDiv;
    const uint8_t *base[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) base[r] = w + (size_t)min(row0 + r, rows - 1) * row_bytes;
    float acc[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) acc[r] = 0.f;
    int chunks = cols / E;
    for (int ch = lane; ch < chunks; ch += kWarp * Unroll) {
        uint4 wv[Unroll][kRowsPerWarp];
#pragma unroll
        for (int u = 0; u < Unroll; u++)
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; r++)
                if (ch + u * kWarp < chunks) wv[u][r] = load_stream(base[r] + (size_t)(ch + u * kWarp) * 16);
#pragma unroll
        for (int u = 0; u < Unroll; u++) {
            int c = ch + u * kWarp;
            if (c >= chunks) break;
            float xf[E];
            load_x<E>(x + (size_t)c * E, xf);
            if (K == W_FP8) // keeps products of subnormal-range weights (bias-shifted e4m3) in the normal range
#pragma unroll
                for (int i = 0; i < E; i++) xf[i] *= 0x1p64f;
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; r++) {
                float part = dot16<K>(wv[u][r], xf, lut);
                if (K == W_NF4) {
                    size_t block = ((size_t)min(row0 + r, rows - 1) * cols + (size_t)c * E) / blocksize;
                    float am = DoubleQuant ? c_dynamic_map[absmax_q[block]] * absmax_q_scale[block / 256] + absmax_offset
                                           : __ldg(absmax + block);
                    acc[r] = fmaf(part, am, acc[r]);
                } else {
                    acc[r] += part;
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) {
        float v = warp_sum(acc[r]);
        int row = row0 + r;
        if (lane == 0 && row < rows) {
            if (K == W_I8 || K == W_FP8_HW) v *= row_scale[row];
            if (K == W_FP8) v *= row_scale[row] * 0x1p56f; // undo the e4m3 bias shift (2^120) and the x scaling (2^-64)
            y[row] = mode ? y[row] + v : v;
        }
    }
}

// LLM.int8(): the non-outlier activation columns quantized per token to int8 (xq), outlier columns listed in
// `outliers`; y = (sum q*xq) * (absmax_x/127) * row_scale  +  sum_{outliers} fp16(q*row_scale) * x.
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp)
matvec_i8_mixed(const int8_t *__restrict__ w, const float *__restrict__ scale, const int8_t *__restrict__ xq,
                const float *__restrict__ x_absmax, const int *__restrict__ outliers, const int *__restrict__ n_outliers,
                const __half *__restrict__ x, float *__restrict__ y, int rows, int cols, int mode)
{
    int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    int row0 = (blockIdx.x * kWarpsPerBlock + warp) * kRowsPerWarp;
    if (row0 >= rows) return;
    const int8_t *base[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) base[r] = w + (size_t)min(row0 + r, rows - 1) * cols;
    int acc[kRowsPerWarp] = {};
    for (int c = lane * 16; c < cols; c += kWarp * 16) {
        uint4 a = *reinterpret_cast<const uint4 *>(xq + c);
        uint4 v[kRowsPerWarp];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; r++) v[r] = load_stream(base[r] + c);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; r++) {
            acc[r] = __dp4a((int)v[r].x, (int)a.x, acc[r]);
            acc[r] = __dp4a((int)v[r].y, (int)a.y, acc[r]);
            acc[r] = __dp4a((int)v[r].z, (int)a.z, acc[r]);
            acc[r] = __dp4a((int)v[r].w, (int)a.w, acc[r]);
        }
    }
    int n = *n_outliers;
    float xs = *x_absmax / 127.f;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; r++) {
        int row = min(row0 + r, rows - 1);
        float s = scale[row], out = 0.f;
        for (int i = lane; i < n; i += kWarp) {
            int j = outliers[i];
            float wdq = __half2float(__float2half((float)base[r][j] * s));
            out = fmaf(wdq, __half2float(x[j]), out);
        }
        out = warp_sum(out);
        int total = warp_sum_int(acc[r]);
        if (lane == 0 && row0 + r < rows) {
            float v = (float)total * xs * s + out;
            y[row] = mode ? y[row] + v : v;
        }
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
