/* Perplexity / KL on a text: tokenize with eco/tokenizer.h, then eco_quality_eval on the ids.
 * Kept apart from quality.c so programs that only use token ids do not link the tokenizer. */
#include <stdlib.h>

#include "eco/engine.h"
#include "eco/tokenizer.h"

eco_err eco_quality_eval_text(const char *backend_name, eco_weights *w, const eco_engine_options *base,
                              const char *tokenizer_path, const char *text, size_t text_len, int max_tokens,
                              const eco_precision *precs, int n_precs, eco_quality_result *out)
{
    eco_tokenizer *tok;
    eco_err e = eco_tokenizer_load(tokenizer_path, &tok);
    if (e) return e;
    int32_t *ids = NULL;
    size_t n = 0;
    e = eco_tokenizer_encode(tok, text, text_len, &ids, &n);
    size_t vocab = eco_tokenizer_vocab_size(tok);
    eco_tokenizer_free(tok);
    if (e) return e;
    if (vocab > (size_t)eco_weights_config(w)->vocab) {
        free(ids);
        return eco_fail(ECO_EINVAL, "tokenizer %s needs %zu embedding rows, the model has %d", tokenizer_path, vocab,
                        eco_weights_config(w)->vocab);
    }
    if (max_tokens > 0 && n > (size_t)max_tokens) n = (size_t)max_tokens;
    if (n > 1u << 20) n = 1u << 20;
    e = eco_quality_eval(backend_name, w, base, ids, (int)n, precs, n_precs, out);
    free(ids);
    return e;
}
