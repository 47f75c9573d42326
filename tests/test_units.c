/* test_units.c: pl_parse_quantity and pl_unit_name, table-driven. */
#include "testutil.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *text;
    pl_unit unit;
    double want;
} good_case;

static const good_case good[] = {
    /* sizes: decimal and binary prefixes, bits, spacing */
    {"16 GiB", PL_UNIT_BYTES, 16.0 * 1024 * 1024 * 1024},
    {"16GB", PL_UNIT_BYTES, 16e9},
    {"512 MB", PL_UNIT_BYTES, 512e6},
    {"4096 B", PL_UNIT_BYTES, 4096},
    {"100 Gb", PL_UNIT_BYTES, 100e9 / 8},
    {"1 kB", PL_UNIT_BYTES, 1000},
    {"1 KB", PL_UNIT_BYTES, 1000},
    {"1 KiB", PL_UNIT_BYTES, 1024},
    {"1 kiB", PL_UNIT_BYTES, 1024},
    {"2 MiB", PL_UNIT_BYTES, 2.0 * 1024 * 1024},
    {"1 TiB", PL_UNIT_BYTES, 1099511627776.0},
    {"1 TB", PL_UNIT_BYTES, 1e12},
    {"1 PB", PL_UNIT_BYTES, 1e15},
    {"8 bits", PL_UNIT_BYTES, 1},
    {"3 bytes", PL_UNIT_BYTES, 3},
    {"1 byte", PL_UNIT_BYTES, 1},
    {"0 B", PL_UNIT_BYTES, 0},
    {"-0 B", PL_UNIT_BYTES, 0},
    {"  1.5 KiB  ", PL_UNIT_BYTES, 1536},
    {"1e3 B", PL_UNIT_BYTES, 1000},
    {"1E-3 MB", PL_UNIT_BYTES, 1000},
    {"+7B", PL_UNIT_BYTES, 7},
    {".5 KiB", PL_UNIT_BYTES, 512},
    /* times */
    {"50ms", PL_UNIT_SECONDS, 0.05},
    {"0.05s", PL_UNIT_SECONDS, 0.05},
    {"1.5 us", PL_UNIT_SECONDS, 1.5e-6},
    {"1.5 \xC2\xB5s", PL_UNIT_SECONDS, 1.5e-6},
    {"1.5 \xCE\xBCs", PL_UNIT_SECONDS, 1.5e-6},
    {"200 ns", PL_UNIT_SECONDS, 200e-9},
    {"2 min", PL_UNIT_SECONDS, 120},
    {"1 h", PL_UNIT_SECONDS, 3600},
    {"3 sec", PL_UNIT_SECONDS, 3},
    {"3 seconds", PL_UNIT_SECONDS, 3},
    /* bandwidths */
    {"25 GB/s", PL_UNIT_BYTES_PER_S, 25e9},
    {"100 Gbps", PL_UNIT_BYTES_PER_S, 100e9 / 8},
    {"100 Gb/s", PL_UNIT_BYTES_PER_S, 100e9 / 8},
    {"100 Gbit/s", PL_UNIT_BYTES_PER_S, 100e9 / 8},
    {"15.75 GB/s", PL_UNIT_BYTES_PER_S, 15.75e9},
    {"900 MiB/s", PL_UNIT_BYTES_PER_S, 900.0 * 1024 * 1024},
    {"10 GBps", PL_UNIT_BYTES_PER_S, 10e9},
    {"1 B/s", PL_UNIT_BYTES_PER_S, 1},
    {"12 bytes/s", PL_UNIT_BYTES_PER_S, 12},
    /* FLOP counts and rates */
    {"4.1 GFLOP", PL_UNIT_FLOPS, 4.1e9},
    {"1.2e9 FLOP", PL_UNIT_FLOPS, 1.2e9},
    {"4.1 GFLOPs", PL_UNIT_FLOPS, 4.1e9},
    {"3 Mflops", PL_UNIT_FLOPS, 3e6},
    {"4.37 TFLOP/s", PL_UNIT_FLOPS_PER_S, 4.37e12},
    {"19.5 TFLOPS", PL_UNIT_FLOPS_PER_S, 19.5e12},
    {"100 GFLOPs/s", PL_UNIT_FLOPS_PER_S, 100e9},
    {"1 PFLOP/s", PL_UNIT_FLOPS_PER_S, 1e15},
    /* prices */
    {"0.90 USD/h", PL_UNIT_USD_PER_HOUR, 0.90},
    {"$3.06/h", PL_UNIT_USD_PER_HOUR, 3.06},
    {"$3.06/hour", PL_UNIT_USD_PER_HOUR, 3.06},
    {"3.06 USD/hour", PL_UNIT_USD_PER_HOUR, 3.06},
    {"3.06 usd/hr", PL_UNIT_USD_PER_HOUR, 3.06},
    {"3.06 $/h", PL_UNIT_USD_PER_HOUR, 3.06},
    {"3.06USD/h", PL_UNIT_USD_PER_HOUR, 3.06},
};

static void test_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        pl_err err = {""};
        double v = -1;
        if (pl_parse_quantity(good[i].text, good[i].unit, &v, &err) < 0)
            fail_msg("'%s' as %s: refused: %s", good[i].text, pl_unit_name(good[i].unit), err.msg);
        if (fabs(v - good[i].want) > 1e-12 * fabs(good[i].want))
            fail_msg("'%s': got %.17g, expected %.17g", good[i].text, v, good[i].want);
        assert_false(signbit(v));
    }
}

typedef struct {
    const char *text;
    pl_unit unit;
    const char *msg[3]; /* substrings the message must contain */
} bad_case;

static const bad_case bad[] = {
    {"16", PL_UNIT_BYTES, {"\"16\"", "the unit is missing", "\"16 GiB\""}},
    {"25", PL_UNIT_BYTES_PER_S, {"\"25\"", "the unit is missing: write e.g. \"25 GB/s\""}},
    {"0.05", PL_UNIT_SECONDS, {"unit is missing", "0.05 ms"}},
    {"$3.06", PL_UNIT_USD_PER_HOUR, {"unit is missing", "$3.06/h"}},
    {"50 GB", PL_UNIT_SECONDS, {"\"50 GB\" is a size, not a time"}},
    {"50 ms", PL_UNIT_BYTES, {"\"50 ms\" is a time, not a size"}},
    {"25 GB/s", PL_UNIT_BYTES, {"is a bandwidth, not a size"}},
    {"19.5 TFLOPS", PL_UNIT_FLOPS, {"is a compute rate, not a FLOP count"}},
    {"4.1 GFLOP", PL_UNIT_FLOPS_PER_S, {"is a FLOP count, not a compute rate"}},
    {"$3/h", PL_UNIT_SECONDS, {"is a price per hour, not a time"}},
    {"16 GiB", PL_UNIT_USD_PER_HOUR, {"is a size, not a price per hour"}},
    {"-5 ms", PL_UNIT_SECONDS, {"\"-5 ms\" is negative"}},
    {"-1 GB/s", PL_UNIT_BYTES_PER_S, {"negative"}},
    {"nan s", PL_UNIT_SECONDS, {"\"nan s\"", "not a finite number"}},
    {"inf GB", PL_UNIT_BYTES, {"not a finite number"}},
    {"-Infinity B", PL_UNIT_BYTES, {"not a finite number"}},
    {"1e400 B", PL_UNIT_BYTES, {"not a finite number"}},
    {"1e308 PB", PL_UNIT_BYTES, {"not a finite number"}},
    {"abc", PL_UNIT_BYTES, {"\"abc\"", "not a number with a unit", "16 GiB"}},
    {"GB 16", PL_UNIT_BYTES, {"not a number with a unit"}},
    {"", PL_UNIT_SECONDS, {"empty", "50 ms"}},
    {"   ", PL_UNIT_SECONDS, {"empty"}},
    {"5 parsecs", PL_UNIT_SECONDS, {"\"5 parsecs\"", "unknown unit \"parsecs\"", "ns, us"}},
    {"16 G", PL_UNIT_BYTES, {"unknown unit \"G\""}},
    {"16 GiBs", PL_UNIT_BYTES, {"unknown unit"}},
    {"0x10 B", PL_UNIT_BYTES, {"unknown unit"}},
    {"1 GiFLOP", PL_UNIT_FLOPS, {"unknown unit"}},
    {"5 MS", PL_UNIT_SECONDS, {"unknown unit"}},
    {"3 /h", PL_UNIT_USD_PER_HOUR, {"unknown unit"}},
    {"$3 GB", PL_UNIT_USD_PER_HOUR, {"unknown unit"}},
    {"1 2 GB", PL_UNIT_BYTES, {"unknown unit"}},
    {"16 GiB extra words that make the unit too long to hold", PL_UNIT_BYTES, {"unknown unit"}},
};

static void test_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_err err = {""};
        double v = 42;
        if (pl_parse_quantity(bad[i].text, bad[i].unit, &v, &err) == 0)
            fail_msg("'%s' as %s: accepted as %g", bad[i].text, pl_unit_name(bad[i].unit), v);
        assert_true(v == 42); /* untouched on failure */
        for (int k = 0; k < 3 && bad[i].msg[k]; k++)
            if (!strstr(err.msg, bad[i].msg[k]))
                fail_msg("'%s': message \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].msg[k]);
    }
}

/* pl_parse_int, the whole-number parser of every flag: the whole text, no saturation. */
static void test_parse_int(void **state)
{
    (void)state;
    long long v = 7;
    assert_int_equal(pl_parse_int("42", 0, 100, &v), 0);
    assert_true(v == 42);
    assert_int_equal(pl_parse_int("-3", -5, 5, &v), 0);
    assert_true(v == -3);
    assert_int_equal(pl_parse_int("4294967295", 0, 4294967295LL, &v), 0);
    const char *bad[] = {"",
                         "abc",
                         "5x",
                         " 5",
                         "+5",
                         "1e3",
                         "0x10",
                         "5 ",
                         "-",
                         "--1",
                         "101",
                         "-6",
                         "99999999999999999999",
                         "-99999999999999999999"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        v = 7;
        if (pl_parse_int(bad[k], -5, 100, &v) == 0) fail_msg("accepted '%s'", bad[k]);
        assert_true(v == 7); /* untouched on failure */
    }
    assert_int_equal(pl_parse_int(NULL, 0, 1, &v), -1);
}

static void test_null_err_and_text(void **state)
{
    (void)state;
    double v = 0;
    assert_int_equal(pl_parse_quantity("16", PL_UNIT_BYTES, &v, NULL), -1);
    assert_int_equal(pl_parse_quantity(NULL, PL_UNIT_BYTES, &v, NULL), -1);
    assert_int_equal(pl_parse_quantity("1 B", (pl_unit)99, &v, NULL), -1);
}

static void test_unit_names(void **state)
{
    (void)state;
    assert_string_equal(pl_unit_name(PL_UNIT_BYTES), "bytes");
    assert_string_equal(pl_unit_name(PL_UNIT_SECONDS), "seconds");
    assert_string_equal(pl_unit_name(PL_UNIT_BYTES_PER_S), "bytes/s");
    assert_string_equal(pl_unit_name(PL_UNIT_FLOPS), "flops");
    assert_string_equal(pl_unit_name(PL_UNIT_FLOPS_PER_S), "flop/s");
    assert_string_equal(pl_unit_name(PL_UNIT_USD_PER_HOUR), "USD/h");
    assert_string_equal(pl_unit_name((pl_unit)99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),       cmocka_unit_test(test_bad),
        cmocka_unit_test(test_parse_int),  cmocka_unit_test(test_null_err_and_text),
        cmocka_unit_test(test_unit_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
