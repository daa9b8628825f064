/* Arrays (dsm/array.h), accumulator values (executor/accum.h) and the RNG. */
#include "t/testutil.h"

#include <math.h>

#include "dsm/array.h"
#include "executor/accum.h"
#include "util/alloc.h"
#include "util/rng.h"

Test(array, dense_is_zeroed_row_major) {
  int64_t dims[2] = {3, 4};
  orion_array *a = orion_array_new_dense(2, dims, ORION_F32, NULL);
  int64_t k[2] = {2, 1};
  cr_assert_not_null(a);
  cr_assert_eq(a->nnz, 12);
  cr_assert_eq(a->strides[0], 4);
  for (int i = 0; i < 12; i++)
    cr_assert_eq(((float *)a->values)[i], 0.0f);
  cr_assert_eq(orion_array_find(a, k), 9);
  orion_array_release(a);
}

Test(array, dense_bad_dims_error) {
  int64_t dims[2] = {3, -1};
  orion_error err;
  orion_error_clear(&err);
  cr_assert_null(orion_array_new_dense(2, dims, ORION_F64, &err));
  cr_assert_eq(err.code, ORION_EDIMS);
  cr_assert_null(orion_array_new_dense(0, dims, ORION_F64, &err));
}

Test(array, sparse_push_grows_dims_and_finds) {
  orion_array *a = orion_array_new_sparse(2, ORION_F64, NULL);
  int64_t k1[2] = {5, 2}, k2[2] = {1, 9}, k3[2] = {5, 3}, miss[2] = {4, 4};
  double v1 = 1.5, v2 = -2, v3 = 7;
  cr_assert_eq(orion_array_push(a, k1, &v1), 0);
  cr_assert_eq(orion_array_push(a, k2, &v2), 0);
  cr_assert_eq(orion_array_push(a, k3, &v3), 0);
  cr_assert_eq(a->nnz, 3);
  cr_assert_eq(a->dims[0], 6);
  cr_assert_eq(a->dims[1], 10);
  cr_assert_eq(orion_array_find(a, k2), 1);
  cr_assert_eq(orion_array_find(a, miss), -1);
  cr_assert_not(orion_array_is_sorted(a));
  cr_assert_eq(orion_array_sort(a, NULL), 0);
  cr_assert(orion_array_is_sorted(a));
  /* Sorted by linear key: (1,9) < (5,2) < (5,3); values moved along. */
  cr_assert_eq(((double *)a->values)[0], -2);
  cr_assert_eq(((double *)a->values)[1], 1.5);
  cr_assert_eq(orion_array_find(a, k3), 2);
  orion_array_release(a);
}

Test(array, set_dims_checks_keys) {
  orion_array *a = orion_array_new_sparse(2, ORION_I32, NULL);
  int64_t k[2] = {4, 4}, small[2] = {4, 10}, ok[2] = {5, 5};
  int32_t v = 3;
  orion_error err;
  orion_array_push(a, k, &v);
  orion_error_clear(&err);
  cr_assert_eq(orion_array_set_dims(a, small, &err), ORION_EKEYRANGE);
  cr_assert(strstr(err.msg, "key 5 in dimension 1") != NULL, "%s", err.msg);
  cr_assert_eq(orion_array_set_dims(a, ok, &err), 0);
  cr_assert_eq(a->dims[0], 5);
  orion_array_release(a);
}

Test(array, copy_is_deep) {
  int64_t dims[1] = {4};
  orion_array *a = orion_array_new_dense(1, dims, ORION_I64, NULL);
  orion_array *c;
  ((int64_t *)a->values)[2] = 99;
  c = orion_array_copy(a, NULL);
  ((int64_t *)a->values)[2] = 1;
  cr_assert_eq(((int64_t *)c->values)[2], 99);
  orion_array_release(a);
  orion_array_release(c);
}

Test(array, histogram_counts_per_bin) {
  orion_array *a = orion_array_new_sparse(2, ORION_F32, NULL);
  int64_t counts[3];
  float v = 1;
  for (int64_t u = 0; u < 9; u++)
    for (int64_t r = 0; r <= u; r++) {
      int64_t k[2] = {u, r};
      orion_array_push(a, k, &v);
    }
  /* dims[0] = 9, 3 bins of width 3: users 0-2, 3-5, 6-8. */
  cr_assert_eq(orion_array_histogram(a, 0, 3, counts), 0);
  cr_assert_eq(counts[0], 1 + 2 + 3);
  cr_assert_eq(counts[1], 4 + 5 + 6);
  cr_assert_eq(counts[2], 7 + 8 + 9);
  orion_array_release(a);
}

Test(array, split_is_deterministic_and_complete) {
  orion_array *a = orion_array_new_sparse(1, ORION_F64, NULL);
  orion_array *r1, *h1, *r2, *h2;
  for (int64_t i = 0; i < 10000; i++) {
    double v = (double)i;
    orion_array_push(a, &i, &v);
  }
  cr_assert_eq(orion_array_split(a, 0.2, 7, &r1, &h1, NULL), 0);
  cr_assert_eq(orion_array_split(a, 0.2, 7, &r2, &h2, NULL), 0);
  cr_assert_eq(r1->nnz + h1->nnz, 10000);
  cr_assert(h1->nnz > 1800 && h1->nnz < 2200, "held %lld", (long long)h1->nnz);
  cr_assert_eq(h1->nnz, h2->nnz);
  cr_assert_arr_eq(h1->keys, h2->keys, sizeof(int64_t) * (size_t)h1->nnz);
  cr_assert_eq(h1->dims[0], 10000);
  orion_array_release(a);
  orion_array_release(r1);
  orion_array_release(h1);
  orion_array_release(r2);
  orion_array_release(h2);
}

Test(array, refcount_frees_memory) {
  size_t before = orion_alloc_used();
  int64_t dims[2] = {100, 100};
  orion_array *a = orion_array_new_dense(2, dims, ORION_F64, NULL);
  cr_assert(orion_alloc_used() >= before + 80000);
  orion_array_retain(a);
  orion_array_release(a);
  cr_assert(orion_alloc_used() >= before + 80000);
  orion_array_release(a);
  cr_assert_eq(orion_alloc_used(), before);
}

Test(array, accum_integer_sum_stays_integer_until_a_float) {
  orion_accval v = {0};
  orion_accval_add_int(&v, ORION_ACC_SUM, 3);
  orion_accval_add_int(&v, ORION_ACC_SUM, 4);
  cr_assert(v.isint);
  cr_assert_eq(v.i, 7);
  orion_accval_add_num(&v, ORION_ACC_SUM, 0.5);
  cr_assert_not(v.isint);
  cr_assert_float_eq(v.d, 7.5, 1e-12);
}

Test(array, accum_min_max_and_combine) {
  orion_accval mn = {0}, mx = {0}, part = {0};
  orion_acc_op op;
  cr_assert_eq(orion_acc_op_parse("min", &op), 0);
  cr_assert_eq(op, ORION_ACC_MIN);
  cr_assert_eq(orion_acc_op_parse("avg", &op), ORION_EINVAL);
  orion_accval_add_num(&mn, ORION_ACC_MIN, 2.5);
  orion_accval_add_num(&mn, ORION_ACC_MIN, -1.0);
  orion_accval_add_int(&mx, ORION_ACC_MAX, -5);
  orion_accval_add_int(&mx, ORION_ACC_MAX, 9);
  orion_accval_add_int(&part, ORION_ACC_MAX, 11);
  orion_accval_combine(&mx, ORION_ACC_MAX, &part);
  cr_assert_float_eq(mn.d, -1.0, 0);
  cr_assert_eq(mx.i, 11);
  /* An empty partial changes nothing. */
  memset(&part, 0, sizeof part);
  orion_accval_combine(&mx, ORION_ACC_MAX, &part);
  cr_assert_eq(mx.i, 11);
}

Test(array, rng_reproducible_and_distributed) {
  orion_rng a, b;
  double sum = 0, sq = 0;
  orion_rng_seed(&a, 5);
  orion_rng_seed(&b, 5);
  for (int i = 0; i < 100; i++)
    cr_assert_eq(orion_rng_next(&a), orion_rng_next(&b));
  for (int i = 0; i < 100000; i++) {
    double x = orion_rng_normal(&a);
    sum += x;
    sq += x * x;
  }
  cr_assert(fabs(sum / 100000) < 0.02);
  cr_assert(fabs(sq / 100000 - 1.0) < 0.02);
  for (int i = 0; i < 1000; i++)
    cr_assert(orion_rng_below(&a, 7) < 7);
}
