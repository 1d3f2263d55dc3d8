/* Exports of eco.wasm (see eco_wasm.c for the calling protocol). Only web/js/eco-wasm.js calls these. */
#ifndef ECO_WASM_H
#define ECO_WASM_H

char *eco_wasm_str(int i);
double *eco_wasm_f64(void);
char *eco_wasm_out(void);
int eco_wasm_str_cap(void);
int eco_wasm_f64_cap(void);

int eco_wasm_reset(void);
int eco_wasm_curve_add(void);
int eco_wasm_curve_anchor(void);
int eco_wasm_curve_boot(int n);
int eco_wasm_curve_loo(int n);
int eco_wasm_curve_item(int kind);
int eco_wasm_fp16_add(void);
int eco_wasm_fp16_point(void);
int eco_wasm_loaded(void);

int eco_wasm_estimate(void);
int eco_wasm_optimize(void);
int eco_wasm_curve_index(void);
int eco_wasm_curve_series(int idx, int n, double x0, double x1);
int eco_wasm_info(void);
int eco_wasm_gpu_arch(void);
int eco_wasm_tokens_per_s_ceiling(int batch);

#endif
