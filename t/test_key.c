/* Key linearisation (dsm/key.h). */
#include "t/testutil.h"

#include "dsm/key.h"
#include "util/error.h"

Test(key, strides_row_major) {
  int64_t dims[3] = {4, 5, 6}, strides[3], total;
  cr_assert_eq(orion_key_strides(3, dims, strides, &total), 0);
  cr_assert_eq(strides[0], 30);
  cr_assert_eq(strides[1], 6);
  cr_assert_eq(strides[2], 1);
  cr_assert_eq(total, 120);
}

Test(key, linearize_and_back_every_key) {
  int64_t dims[3] = {3, 4, 5}, k[3], back[3], lin, expect = 0;
  for (k[0] = 0; k[0] < 3; k[0]++)
    for (k[1] = 0; k[1] < 4; k[1]++)
      for (k[2] = 0; k[2] < 5; k[2]++) {
        cr_assert_eq(orion_key_linearize(3, dims, k, &lin), 0);
        cr_assert_eq(lin, expect, "key (%lld,%lld,%lld)", (long long)k[0],
                     (long long)k[1], (long long)k[2]);
        orion_key_delinearize(3, dims, lin, back);
        cr_assert_arr_eq(back, k, sizeof k);
        expect++;
      }
}

Test(key, out_of_range_keys_rejected) {
  int64_t dims[2] = {3, 4}, lin = -7;
  int64_t over[2] = {3, 0}, under[2] = {0, -1}, edge[2] = {2, 3};
  cr_assert_eq(orion_key_linearize(2, dims, over, &lin), ORION_EKEYRANGE);
  cr_assert_eq(orion_key_linearize(2, dims, under, &lin), ORION_EKEYRANGE);
  cr_assert_eq(orion_key_linearize(2, dims, edge, &lin), 0);
  cr_assert_eq(lin, 11);
}

Test(key, bad_dims_and_overflow) {
  int64_t zero[2] = {3, 0}, huge[3] = {INT64_MAX / 2, 3, 1}, total;
  int64_t big[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
  cr_assert_eq(orion_key_strides(2, zero, NULL, &total), ORION_EDIMS);
  cr_assert_eq(orion_key_strides(3, huge, NULL, &total), ORION_EOVERFLOW);
  cr_assert_eq(orion_key_strides(0, zero, NULL, &total), ORION_EDIMS);
  cr_assert_eq(orion_key_strides(9, zero, NULL, &total), ORION_EDIMS);
  cr_assert_eq(orion_key_strides(2, big, NULL, &total), 0);
  cr_assert_eq(total, (int64_t)1 << 62);
}

Test(key, one_dimension_is_identity) {
  int64_t dims[1] = {100}, k[1] = {42}, lin;
  cr_assert_eq(orion_key_linearize(1, dims, k, &lin), 0);
  cr_assert_eq(lin, 42);
}

/* Keys from a peer (a RUN_BLOCK's block, a LOADED part) are checked where
 * they are decoded: the first element and dimension outside are named, and
 * keys at any alignment (views into a frame) are read. */
Test(key, check_all_names_the_first_key_outside) {
  static const int64_t dims[2] = {10, 40};
  int64_t keys[7] = {0, 0, 9, 39, 3, 40, 0};
  char raw[sizeof keys + 1];
  int64_t e = -1;
  int d = -1;
  cr_assert_eq(orion_key_check_all(2, dims, keys, 2, &e, &d), 0);
  cr_assert_eq(orion_key_check_all(2, dims, keys, 3, &e, &d),
               ORION_EKEYRANGE);
  cr_assert_eq(e, 2);
  cr_assert_eq(d, 1);
  keys[5] = 1;
  keys[4] = -1;
  cr_assert_eq(orion_key_check_all(2, dims, keys, 3, &e, &d),
               ORION_EKEYRANGE);
  cr_assert_eq(e, 2);
  cr_assert_eq(d, 0);
  keys[4] = 3;
  memcpy(raw + 1, keys, sizeof keys); /* misaligned, as in a frame */
  cr_assert_eq(orion_key_check_all(2, dims, raw + 1, 3, NULL, NULL), 0);
  cr_assert_eq(orion_key_check_all(2, dims, NULL, 0, NULL, NULL), 0);
}
