/* Byte-level BPE tokenizer read from a Hugging Face tokenizer.json (GPT-2, Qwen2, Llama-3 families).
 * What is supported, and where it deliberately differs from the HF libraries: docs/TOKENIZER.md.
 *
 * Encoding follows HF `tokenizers` (Rust): added tokens are split out first (leftmost-longest match),
 * the rest is normalized (none, or NFC on text NFC leaves unchanged), pre-split by the pre_tokenizer's
 * regexes (pcre2, UTF + UCP, `\s` = Unicode White_Space as in Oniguruma), mapped to GPT-2's byte alphabet
 * and merged by rank; the post_processor then adds special tokens (e.g. Llama-3's <|begin_of_text|>).
 * A loaded tokenizer is immutable: encode/decode may run concurrently on one instance. */
#ifndef ECO_TOKENIZER_H
#define ECO_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"

typedef struct eco_tokenizer eco_tokenizer;

/* Limits on untrusted tokenizer.json files (real ones: ~7-17 MB, vocab <= ~260k). */
#define ECO_TOKENIZER_MAX_JSON_BYTES ((size_t)512 << 20)
#define ECO_TOKENIZER_MAX_VOCAB ((int32_t)1 << 22)   /* ids must be < this */
#define ECO_TOKENIZER_MAX_TOKEN_BYTES 4096            /* longest vocab / added-token string */
#define ECO_TOKENIZER_MAX_TEXT_BYTES ((size_t)1 << 30) /* longest text to encode */

/* Flags for eco_tokenizer_encode_ex / eco_tokenizer_decode_ex. */
#define ECO_TOK_NO_SPECIAL 1u   /* encode: do not run the post_processor's template (HF add_special_tokens=false) */
#define ECO_TOK_SKIP_SPECIAL 2u /* decode: leave out added tokens marked "special" */

/* Loads a tokenizer.json file / JSON text. Errors: EIO (unreadable file), ETOOBIG (over a limit above),
 * EFORMAT (malformed JSON, missing or ill-typed fields, merges naming tokens not in the vocab, duplicate
 * ids, a regex pcre2 cannot compile), EUNSUPPORTED (a valid component this tokenizer does not implement,
 * e.g. a WordPiece model or a Metaspace pre-tokenizer). The message names the JSON field. */
eco_err eco_tokenizer_load(const char *path, eco_tokenizer **out);
eco_err eco_tokenizer_load_json(const char *text, size_t len, eco_tokenizer **out);
void eco_tokenizer_free(eco_tokenizer *tok);

/* Encodes `len` bytes of UTF-8 into token ids, with the post_processor's special tokens (as HF's
 * encode(text) with add_special_tokens=true). *ids is malloc'd (free() it; may be NULL when *n == 0).
 * Errors: EINVAL for text that is not valid UTF-8 (the byte offset is named), EUNSUPPORTED when an NFC
 * normalizer would change the text, ETOOBIG for text over ECO_TOKENIZER_MAX_TEXT_BYTES or a regex that
 * hits pcre2's match limit. */
eco_err eco_tokenizer_encode(const eco_tokenizer *tok, const char *utf8, size_t len, int32_t **ids, size_t *n);
eco_err eco_tokenizer_encode_ex(const eco_tokenizer *tok, const char *utf8, size_t len, unsigned flags,
                                int32_t **ids, size_t *n);

/* Decodes ids back to bytes through the ByteLevel decoder. *utf8 is malloc'd and NUL-terminated (free() it);
 * *len excludes the NUL. The bytes are returned as they are: a cut inside a multi-byte character is not
 * replaced by U+FFFD (HF does), so decode(encode(s)) == s byte for byte and streams can be decoded piecewise.
 * Errors: EINVAL naming the position of an id that is not in the vocabulary. */
eco_err eco_tokenizer_decode(const eco_tokenizer *tok, const int32_t *ids, size_t n, char **utf8, size_t *len);
eco_err eco_tokenizer_decode_ex(const eco_tokenizer *tok, const int32_t *ids, size_t n, unsigned flags,
                                char **utf8, size_t *len);

/* Number of embedding rows the ids need: 1 + the largest id of the model vocab and the added tokens
 * (Llama-3: 128256). Ids without a token (gaps) are possible but never produced by encode. */
size_t eco_tokenizer_vocab_size(const eco_tokenizer *tok);

/* Token string (in the byte-level alphabet, e.g. "Ġthe", or an added token's content) <-> id.
 * Added tokens take precedence, as in HF. ENOTFOUND when absent. *token stays valid until free. */
eco_err eco_tokenizer_token_to_id(const eco_tokenizer *tok, const char *token, int32_t *id);
eco_err eco_tokenizer_id_to_token(const eco_tokenizer *tok, int32_t id, const char **token);
/* True when `id` is an added token marked special (BOS/EOS/chat markers). */
bool eco_tokenizer_is_special(const eco_tokenizer *tok, int32_t id);

#endif
