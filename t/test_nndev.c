/* orion.nn's device half (executor/nn_dev.c) on a fake GPU (t/fake_gpu.c: the
 * backend and the kernels over host memory, device blocks filled with NaN
 * until written): the state's kernels go to the "device", the host and
 * device copies of a matrix stay coherent (a stale copy would show as NaN
 * or an old value), results equal a CPU state's bit for bit, and with
 * device memory full the kernels fall back to the CPU.  The same scripts
 * run on a real device in t/gpu_nn.c (make check-gpu). */
#include "t/testutil.h"

#include <criterion/redirect.h>
#include <lauxlib.h>
#include <lualib.h>

#include "gpu/gpu.h"
#include "executor/nn.h"
#include "t/nnstate.h"

extern long fake_gpu_calls;
extern uint64_t fake_gpu_cap;

static lua_State *nn_state(orion_gpu *g) {
  orion_error err;
  lua_State *L = tu_nn_state(g, &err);
  cr_assert_not_null(L, "%s", err.msg);
  return L;
}

/* Runs t/scripts/NAME with the nn table; returns its string (static). */
static const char *run(lua_State *L, const char *name) {
  static char out[2][256];
  static int k;
  char rel[256], *path;
  snprintf(rel, sizeof rel, "t/scripts/%s", name);
  path = tu_src(rel);
  cr_assert_eq(luaL_loadfile(L, path), LUA_OK, "%s", lua_tostring(L, -1));
  free(path);
  lua_getfield(L, LUA_REGISTRYINDEX, ORION_NN_KEY);
  cr_assert_eq(lua_pcall(L, 1, 1, 0), LUA_OK, "%s: %s", name,
               lua_tostring(L, -1));
  k ^= 1;
  snprintf(out[k], sizeof out[k], "%s",
           lua_isstring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
  lua_pop(L, 1);
  return out[k];
}

static orion_gpu *open_fake(void) {
  orion_gpu *g;
  orion_error err;
  orion_error_clear(&err);
  cr_assert_eq(orion_gpu_open(0, 0, &g, &err), 0);
  return g;
}

Test(nndev, host_writes_between_device_kernels_are_seen) {
  orion_gpu *g = open_fake();
  lua_State *L = nn_state(g);
  long before = fake_gpu_calls;
  cr_assert_str_eq(run(L, "nn_dev_stale.lua"), "GPU 0 (fake GPU)");
  cr_assert_geq(fake_gpu_calls - before, 5, "the kernels ran on the CPU");
  cr_assert_gt(orion_gpu_in_use(g), 0);
  lua_close(L);
  cr_assert_eq(orion_gpu_in_use(g), 0, "matrices freed their device copies");
  orion_gpu_close(g);
}

Test(nndev, mlp_on_the_device_equals_the_cpu_bit_for_bit, .timeout = 60) {
  orion_gpu *g = open_fake();
  lua_State *cpu = nn_state(NULL), *dev = nn_state(g);
  long before = fake_gpu_calls;
  const char *rc = run(cpu, "nn_dev_mlp.lua");
  long mid = fake_gpu_calls;
  const char *rd = run(dev, "nn_dev_mlp.lua");
  double loss, acc;
  cr_assert_eq(mid, before, "the CPU state used the device");
  cr_assert_geq(fake_gpu_calls - mid, 16 * 30, "16 kernels a step, 30 steps");
  cr_assert_str_eq(rd, rc);
  cr_assert_eq(sscanf(rc, "%lf %lf", &loss, &acc), 2);
  cr_assert_gt(acc, 0.9, "%s", rc);
  lua_close(cpu);
  lua_close(dev);
  orion_gpu_close(g);
}

/* Device memory for the scratch and a few small matrices only: the
 * kernels that cannot get theirs run on the CPU, with the same results. */
Test(nndev, full_device_memory_falls_back_to_the_cpu, .timeout = 60,
     .init = cr_redirect_stderr) {
  orion_gpu *g = open_fake();
  lua_State *cpu = nn_state(NULL), *dev;
  const char *rc = run(cpu, "nn_dev_mlp.lua"), *rd;
  long before;
  fake_gpu_cap = 64 << 10;
  dev = nn_state(g);
  before = fake_gpu_calls;
  rd = run(dev, "nn_dev_mlp.lua");
  fake_gpu_cap = 0;
  cr_assert_str_eq(rd, rc);
  cr_assert_gt(fake_gpu_calls - before, 0, "nothing ran on the device");
  fflush(stderr);
  cr_assert_stderr_neq_str("");
  lua_close(cpu);
  lua_close(dev);
  orion_gpu_close(g);
}
