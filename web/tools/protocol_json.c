/* Prints the measurement protocol's constants as JSON for the Methodology page: the page is generated from
 * these (ECO_PROTOCOL_VERSION and eco_measure_options_default) so it cannot drift from what `eco measure` runs.
 * Built against libeco by scripts/build-web.sh. */
#include <stdio.h>

#include "eco/measure.h"
#include "eco/quant.h"

int main(void)
{
    eco_measure_options o;
    eco_measure_options_default(&o);
    printf("{\n \"protocol_version\": \"%s\",\n \"eco_version\": \"%s\",\n \"max_configs\": %d,\n", ECO_PROTOCOL_VERSION, ECO_VERSION,
           ECO_MEASURE_MAX_CONFIGS);
    printf(" \"defaults\": {\n  \"baseline\": \"%s\",\n  \"tokens\": %d,\n  \"blocks\": %d,\n  \"warmups\": %d,\n"
           "  \"min_window_s\": %.17g,\n  \"min_generations\": %d,\n  \"idle_s\": %.17g,\n  \"seed\": %llu,\n"
           "  \"sampler_period_ms\": %u\n }\n}\n",
           eco_precision_name(o.precisions[0]), o.tokens, o.iterations, o.warmups, o.min_window_s, o.min_generations, o.idle_s,
           (unsigned long long)o.seed, o.sampler_period_ms);
    return 0;
}
