/* fuzz_results.h — the results that the expression targets (fuzz_expr.c,
 * fuzz_chain.c) evaluate over: a sweep, an older run, a histogram with bins,
 * a device list. Built once per process; each target includes it once.
 */
#ifndef CUDALAB_FUZZ_RESULTS_H
#define CUDALAB_FUZZ_RESULTS_H

#include <stdio.h>
#include <stdlib.h>

#include "grade/results.h"

static const result_store *fuzz_results(void)
{
    static const char *const docs[] = {
        "{\"magic\":\"matmul\",\"params\":{\"size\":64,\"seed\":1},\"runs\":[{\"variant\":\"naive\",\"tile\":null,"
        "\"gflops\":4.5,\"check\":{\"passed\":true},\"worst\":[1,2]}]}",
        "{\"magic\":\"matmul\",\"params\":{\"size\":64},\"sweep\":{\"varying\":[\"variant\",\"tile\"]},\"runs\":["
        "{\"variant\":\"tiled\",\"tile\":8,\"gflops\":10.0,\"check\":{\"passed\":true}},"
        "{\"variant\":\"tiled\",\"tile\":16,\"gflops\":-0.0,\"check\":{\"passed\":false}},"
        "{\"variant\":\"fast\",\"tile\":null,\"gflops\":1e308,\"check\":{\"passed\":true}}]}",
        "{\"magic\":\"histo\",\"runs\":[{\"variant\":\"cpu\",\"bins\":{\"a-d\":5,\"\\u00e9\":1},\"nbins\":2,"
        "\"big\":[1e308,1e308,9223372036854775807,-9223372036854775808]}]}",
        "{\"magic\":\"device\",\"count\":1,\"devices\":[{\"name\":\"H\\u00e9\",\"sms\":132}],\"runs\":[]}",
    };
    static result_store *rs;
    if (rs)
        return rs;
    rs = results_new();
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_t *d = json_loads(docs[i], 0, NULL);
        if (!d) {
            fprintf(stderr, "fuzz_results.h: fixture %zu does not parse\n", i);
            abort();
        }
        results_record(rs, d, (int)i + 1);
        json_decref(d);
    }
    return rs;
}

#endif
