/* Shared helpers for cmocka unit tests (Debian 12's cmocka 1.1.5 has no double asserts). */
#ifndef ECO_TEST_H
#define ECO_TEST_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

/* |a - b| <= eps, printing both values when it fails. */
#define assert_near(a, b, eps)                                                                              \
    do {                                                                                                    \
        double eco_a_ = (double)(a), eco_b_ = (double)(b), eco_e_ = (double)(eps);                          \
        if (!(fabs(eco_a_ - eco_b_) <= eco_e_))                                                             \
            fail_msg("%s = %.17g, expected %s = %.17g (within %g)", #a, eco_a_, #b, eco_b_, eco_e_);        \
    } while (0)

/* Path of a file in the source tree / the shared folder (from the CTest environment). */
static inline const char *eco_test_path(const char *env, const char *rel, char *buf, size_t cap)
{
    const char *root = getenv(env);
    snprintf(buf, cap, "%s/%s", root ? root : ".", rel);
    return buf;
}

#endif
