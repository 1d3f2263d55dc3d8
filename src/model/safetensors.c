/* Safetensors reader (mmap, every offset and size checked) and a small writer for fixtures.
 * Layout: u64 LE header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, __metadata__},
 * then the data buffer the offsets are relative to. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "eco/model.h"
#include "eco/quant.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader assumes a little-endian host"
#endif

static const struct { const char *name; unsigned bytes; } dtypes[ECO_DT_COUNT] = {
    [ECO_DT_BOOL] = {"BOOL", 1}, [ECO_DT_U8] = {"U8", 1},   [ECO_DT_I8] = {"I8", 1},
    [ECO_DT_F8_E4M3] = {"F8_E4M3", 1}, [ECO_DT_F8_E5M2] = {"F8_E5M2", 1},
    [ECO_DT_I16] = {"I16", 2}, [ECO_DT_U16] = {"U16", 2}, [ECO_DT_F16] = {"F16", 2}, [ECO_DT_BF16] = {"BF16", 2},
    [ECO_DT_I32] = {"I32", 4}, [ECO_DT_U32] = {"U32", 4}, [ECO_DT_F32] = {"F32", 4},
    [ECO_DT_I64] = {"I64", 8}, [ECO_DT_U64] = {"U64", 8}, [ECO_DT_F64] = {"F64", 8},
};

const char *eco_dtype_name(eco_dtype d) { return (unsigned)d < ECO_DT_COUNT ? dtypes[d].name : "?"; }
unsigned eco_dtype_bytes(eco_dtype d) { return (unsigned)d < ECO_DT_COUNT ? dtypes[d].bytes : 0; }

struct eco_safetensors {
    const uint8_t *base;
    size_t len;
    bool mapped;
    char *label;
    eco_st_tensor *t;        /* sorted by begin_bytes */
    eco_st_tensor **by_name; /* sorted by name */
    size_t n;
    char **meta;             /* key, value, key, value, ... */
    size_t n_meta;
};

void eco_safetensors_close(eco_safetensors *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) free((char *)st->t[i].name);
    for (size_t i = 0; i < 2 * st->n_meta; i++) free(st->meta[i]);
    free(st->meta);
    free(st->t);
    free(st->by_name);
    if (st->mapped && st->len) munmap((void *)st->base, st->len);
    free(st->label);
    free(st);
}

static int cmp_begin(const void *a, const void *b)
{
    const eco_st_tensor *x = a, *y = b;
    if (x->begin_bytes != y->begin_bytes) return x->begin_bytes < y->begin_bytes ? -1 : 1;
    return x->size_bytes < y->size_bytes ? -1 : x->size_bytes > y->size_bytes;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(eco_st_tensor *const *)a)->name, (*(eco_st_tensor *const *)b)->name);
}

static eco_err parse_u64(json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return ECO_EFORMAT;
    *out = (uint64_t)json_integer_value(v);
    return ECO_OK;
}

static eco_err parse_tensor(const char *name, json_t *obj, eco_st_tensor *t)
{
    if (!json_is_object(obj)) return eco_fail(ECO_EFORMAT, "tensor \"%s\": entry must be an object", name);
    json_t *dt = json_object_get(obj, "dtype"), *shape = json_object_get(obj, "shape"), *off = json_object_get(obj, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(off))
        return eco_fail(ECO_EFORMAT, "tensor \"%s\": needs string \"dtype\", array \"shape\" and array \"data_offsets\"", name);
    const char *d = json_string_value(dt);
    t->dtype = ECO_DT_COUNT;
    for (int i = 0; i < ECO_DT_COUNT; i++)
        if (!strcmp(d, dtypes[i].name)) t->dtype = (eco_dtype)i;
    if (t->dtype == ECO_DT_COUNT) return eco_fail(ECO_EUNSUPPORTED, "tensor \"%s\": unknown dtype \"%.32s\"", name, d);
    size_t nd = json_array_size(shape);
    if (nd > ECO_ST_MAX_DIMS) return eco_fail(ECO_EFORMAT, "tensor \"%s\": %zu dims, at most %d supported", name, nd, ECO_ST_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t nelem = 1;
    for (size_t i = 0; i < nd; i++) {
        if (parse_u64(json_array_get(shape, i), &t->shape[i]))
            return eco_fail(ECO_EFORMAT, "tensor \"%s\": shape[%zu] must be a non-negative integer", name, i);
        if (t->shape[i] && nelem > UINT64_MAX / t->shape[i])
            return eco_fail(ECO_EFORMAT, "tensor \"%s\": element count overflows", name);
        nelem *= t->shape[i];
    }
    t->nelem = nelem;
    uint64_t begin, end;
    if (json_array_size(off) != 2 || parse_u64(json_array_get(off, 0), &begin) || parse_u64(json_array_get(off, 1), &end))
        return eco_fail(ECO_EFORMAT, "tensor \"%s\": data_offsets must be [begin, end] of non-negative integers", name);
    if (end < begin)
        return eco_fail(ECO_EFORMAT, "tensor \"%s\": data_offsets [%llu, %llu) end before begin", name,
                        (unsigned long long)begin, (unsigned long long)end);
    if (nelem > UINT64_MAX / dtypes[t->dtype].bytes) return eco_fail(ECO_EFORMAT, "tensor \"%s\": byte size overflows", name);
    uint64_t need = nelem * dtypes[t->dtype].bytes;
    if (need != end - begin)
        return eco_fail(ECO_EFORMAT, "tensor \"%s\": size mismatch: %llu elements of %s need %llu bytes, data_offsets span %llu",
                        name, (unsigned long long)nelem, d, (unsigned long long)need, (unsigned long long)(end - begin));
    t->begin_bytes = begin;
    t->size_bytes = end - begin;
    return ECO_OK;
}

static eco_err parse_metadata(eco_safetensors *st, json_t *meta)
{
    if (!json_is_object(meta)) return eco_fail(ECO_EFORMAT, "__metadata__ must be an object");
    st->meta = calloc(2 * json_object_size(meta) + 1, sizeof *st->meta);
    if (!st->meta) return eco_fail(ECO_ENOMEM, "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach(meta, k, v) {
        if (!json_is_string(v)) return eco_fail(ECO_EFORMAT, "__metadata__[\"%s\"] must be a string", k);
        st->meta[2 * st->n_meta] = strdup(k);
        st->meta[2 * st->n_meta + 1] = strdup(json_string_value(v));
        st->n_meta++;
        if (!st->meta[2 * st->n_meta - 2] || !st->meta[2 * st->n_meta - 1]) return eco_fail(ECO_ENOMEM, "out of memory");
    }
    return ECO_OK;
}

static eco_err check_layout(eco_safetensors *st, uint64_t data_len)
{
    qsort(st->t, st->n, sizeof *st->t, cmp_begin);
    uint64_t prev_end = 0, max_end = 0;
    bool contiguous = true;
    for (size_t i = 0; i < st->n; i++) {
        const eco_st_tensor *t = &st->t[i];
        if (i > 0 && t->begin_bytes < prev_end)
            return eco_fail(ECO_EFORMAT, "tensors \"%s\" and \"%s\" overlap: data_offsets [%llu, ...) begins before %llu",
                            st->t[i - 1].name, t->name, (unsigned long long)t->begin_bytes, (unsigned long long)prev_end);
        if (t->begin_bytes != prev_end) contiguous = false;
        prev_end = t->begin_bytes + t->size_bytes;
        if (prev_end > max_end) max_end = prev_end;
    }
    if (contiguous && max_end > data_len)
        return eco_fail(ECO_EFORMAT, "file truncated: the header describes %llu data bytes, the file holds %llu",
                        (unsigned long long)max_end, (unsigned long long)data_len);
    prev_end = 0;
    for (size_t i = 0; i < st->n; i++) {
        const eco_st_tensor *t = &st->t[i];
        if (t->begin_bytes + t->size_bytes > data_len)
            return eco_fail(ECO_EFORMAT, "tensor \"%s\": data_offsets [%llu, %llu) out of bounds of the %llu-byte data buffer",
                            t->name, (unsigned long long)t->begin_bytes, (unsigned long long)(t->begin_bytes + t->size_bytes),
                            (unsigned long long)data_len);
        if (t->begin_bytes != prev_end)
            return eco_fail(ECO_EFORMAT, "data bytes [%llu, %llu) belong to no tensor (a hole before \"%s\")",
                            (unsigned long long)prev_end, (unsigned long long)t->begin_bytes, t->name);
        prev_end = t->begin_bytes + t->size_bytes;
    }
    if (prev_end != data_len)
        return eco_fail(ECO_EFORMAT, "%llu trailing bytes after the last tensor", (unsigned long long)(data_len - prev_end));
    return ECO_OK;
}

static eco_err parse_header(eco_safetensors *st)
{
    const uint8_t *buf = st->base;
    size_t len = st->len;
    if (len < 8) return eco_fail(ECO_EFORMAT, "file truncated: %zu bytes, the 8-byte header length is missing", len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
    if (hlen > ECO_ST_MAX_HEADER_BYTES)
        return eco_fail(ECO_ETOOBIG, "header length %llu exceeds the %llu-byte limit", (unsigned long long)hlen,
                        ECO_ST_MAX_HEADER_BYTES);
    if (hlen > len - 8)
        return eco_fail(ECO_EFORMAT, "header length %llu runs past the end of the file (%zu bytes after the length)",
                        (unsigned long long)hlen, len - 8);
    if (hlen < 2 || buf[8] != '{') return eco_fail(ECO_EFORMAT, "header must be a JSON object starting with '{'");
    json_error_t jerr;
    json_t *root = json_loadb((const char *)buf + 8, hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return eco_fail(ECO_EFORMAT, "header is not valid JSON (column %d: %s)", jerr.column, jerr.text);
    eco_err e = ECO_OK;
    if (!json_is_object(root)) { e = eco_fail(ECO_EFORMAT, "header must be a JSON object"); goto out; }
    size_t cap = json_object_size(root);
    st->t = calloc(cap + 1, sizeof *st->t);
    st->by_name = calloc(cap + 1, sizeof *st->by_name);
    if (!st->t || !st->by_name) { e = eco_fail(ECO_ENOMEM, "out of memory"); goto out; }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        if (!strcmp(k, "__metadata__")) {
            if ((e = parse_metadata(st, v))) goto out;
            continue;
        }
        eco_st_tensor *t = &st->t[st->n];
        if ((e = parse_tensor(k, v, t))) goto out;
        if (!(t->name = strdup(k))) { e = eco_fail(ECO_ENOMEM, "out of memory"); goto out; }
        st->n++;
    }
    uint64_t data_off = 8 + hlen;
    if ((e = check_layout(st, len - data_off))) goto out;
    for (size_t i = 0; i < st->n; i++) {
        st->t[i].data = buf + data_off + st->t[i].begin_bytes;
        st->by_name[i] = &st->t[i];
    }
    qsort(st->by_name, st->n, sizeof *st->by_name, cmp_name);
out:
    json_decref(root);
    return e;
}

static eco_err finish_open(eco_safetensors *st, eco_safetensors **out)
{
    eco_err e = parse_header(st);
    if (e) {
        eco_fail_context("safetensors %s: ", st->label);
        eco_safetensors_close(st);
        return e;
    }
    *out = st;
    return ECO_OK;
}

eco_err eco_safetensors_parse(const uint8_t *buf, size_t len, const char *label, eco_safetensors **out)
{
    eco_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->label = strdup(label ? label : "(buffer)"))) { free(st); return eco_fail(ECO_ENOMEM, "out of memory"); }
    st->base = buf;
    st->len = len;
    return finish_open(st, out);
}

eco_err eco_safetensors_open(const char *path, eco_safetensors **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return eco_fail(ECO_EIO, "safetensors %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return eco_fail(ECO_EIO, "safetensors %s: not a regular file", path);
    }
    eco_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->label = strdup(path))) { free(st); close(fd); return eco_fail(ECO_ENOMEM, "out of memory"); }
    st->len = (size_t)sb.st_size;
    if (st->len) {
        void *p = mmap(NULL, st->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            close(fd);
            free(st->label);
            free(st);
            return eco_fail(ECO_EIO, "safetensors %s: mmap: %s", path, strerror(err));
        }
        st->base = p;
        st->mapped = true;
    }
    close(fd);
    return finish_open(st, out);
}

size_t eco_safetensors_count(const eco_safetensors *st) { return st ? st->n : 0; }

const eco_st_tensor *eco_safetensors_at(const eco_safetensors *st, size_t i) { return st && i < st->n ? &st->t[i] : NULL; }

const eco_st_tensor *eco_safetensors_find(const eco_safetensors *st, const char *name)
{
    if (!st || !name) return NULL;
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, st->by_name[mid]->name);
        if (!c) return st->by_name[mid];
        if (c < 0) hi = mid; else lo = mid + 1;
    }
    return NULL;
}

const char *eco_safetensors_metadata(const eco_safetensors *st, const char *key)
{
    for (size_t i = 0; st && i < st->n_meta; i++)
        if (!strcmp(st->meta[2 * i], key)) return st->meta[2 * i + 1];
    return NULL;
}

eco_err eco_st_tensor_read_f32(const eco_st_tensor *t, uint64_t elem_begin, uint64_t count, float *dst)
{
    if (elem_begin > t->nelem || count > t->nelem - elem_begin)
        return eco_fail(ECO_EINVAL, "tensor \"%s\": elements [%llu, +%llu) out of range (%llu elements)", t->name,
                        (unsigned long long)elem_begin, (unsigned long long)count, (unsigned long long)t->nelem);
    const uint8_t *p = t->data + elem_begin * dtypes[t->dtype].bytes;
    switch (t->dtype) {
    case ECO_DT_F32: memcpy(dst, p, count * 4); return ECO_OK;
    case ECO_DT_F16:
        for (uint64_t i = 0; i < count; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = eco_f16_to_f32(h);
        }
        return ECO_OK;
    case ECO_DT_BF16:
        for (uint64_t i = 0; i < count; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = eco_bf16_to_f32(h);
        }
        return ECO_OK;
    default:
        return eco_fail(ECO_EUNSUPPORTED, "tensor \"%s\": dtype %s cannot be read as floats (F16, BF16, F32 only)", t->name,
                        dtypes[t->dtype].name);
    }
}

eco_err eco_safetensors_write(const char *path, const eco_st_write_tensor *tensors, size_t n,
                              const char *const *metadata, size_t n_meta)
{
    json_t *root = json_object();
    if (!root) return eco_fail(ECO_ENOMEM, "out of memory");
    if (n_meta) {
        json_t *m = json_object();
        for (size_t i = 0; i < n_meta; i++) json_object_set_new(m, metadata[2 * i], json_string(metadata[2 * i + 1]));
        json_object_set_new(root, "__metadata__", m);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const eco_st_write_tensor *t = &tensors[i];
        if ((unsigned)t->dtype >= ECO_DT_COUNT || t->ndim < 0 || t->ndim > ECO_ST_MAX_DIMS) {
            json_decref(root);
            return eco_fail(ECO_EINVAL, "safetensors %s: tensor \"%s\": bad dtype or ndim", path, t->name);
        }
        uint64_t ne = 1;
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) {
            ne *= t->shape[d];
            json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        }
        uint64_t bytes = ne * dtypes[t->dtype].bytes;
        json_object_set_new(root, t->name,
                            json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtypes[t->dtype].name, "shape", shape,
                                      "data_offsets", (json_int_t)off, (json_int_t)(off + bytes)));
        off += bytes;
    }
    char *hdr = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!hdr) return eco_fail(ECO_ENOMEM, "out of memory");
    size_t hlen = strlen(hdr), padded = (hlen + 7) / 8 * 8;
    FILE *f = fopen(path, "wb");
    if (!f) { free(hdr); return eco_fail(ECO_EIO, "safetensors %s: %s", path, strerror(errno)); }
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    bool ok = fwrite(lenb, 1, 8, f) == 8 && fwrite(hdr, 1, hlen, f) == hlen;
    for (size_t i = hlen; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    free(hdr);
    for (size_t i = 0; ok && i < n; i++) {
        uint64_t ne = 1;
        for (int d = 0; d < tensors[i].ndim; d++) ne *= tensors[i].shape[d];
        size_t bytes = (size_t)(ne * dtypes[tensors[i].dtype].bytes);
        ok = !bytes || fwrite(tensors[i].data, 1, bytes, f) == bytes;
    }
    if (fclose(f) || !ok) return eco_fail(ECO_EIO, "safetensors %s: write failed", path);
    return ECO_OK;
}
