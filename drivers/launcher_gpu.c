/* Which devices a job's executors own: orion-driver's --gpus and
 * --gpu-memory, the default of one local executor per visible GPU, and
 * the --gpu of each executor's command line (drivers/launcher.h). */
#include "drivers/launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

int orion_launcher_set_gpus(orion_launcher *l, const char *arg,
                            orion_error *err) {
  char *end;
  long v;
  if (arg != NULL && strcmp(arg, "all") == 0) {
    l->gpus = -1;
  } else {
    v = arg != NULL && arg[0] >= '0' && arg[0] <= '9' ? strtol(arg, &end, 10)
                                                      : 0;
    if (v < 1 || v > 4096 || *end != '\0')
      return orion_error_set(err, ORION_EOPTION,
                             "--gpus needs a number of GPUs 1..4096 or "
                             "'all', not '%s'",
                             arg != NULL ? arg : "");
    l->gpus = (int)v;
  }
  snprintf(l->gpus_text, sizeof l->gpus_text, "%s", arg);
  return 0;
}

int orion_launcher_gpu_setup(orion_launcher *l, int *nexec, int exec_given,
                             char *note, size_t n, orion_error *err) {
  int (*count)(const char **) =
      l->gpu_count != NULL ? l->gpu_count : orion_gpu_count;
  const char *why = "";
  int have;
  if (n > 0)
    note[0] = '\0';
  if (l->kind != ORION_LAUNCH_LOCAL) {
    if (l->gpus == 0 && l->gpu_memory != NULL)
      return orion_error_set(err, ORION_EOPTION,
                             "--gpu-memory needs --gpus N or --gpus all");
    return 0;
  }
  if (l->gpus == 0) {
    if (exec_given || *nexec == 0) {
      if (l->gpu_memory != NULL)
        return orion_error_set(err, ORION_EOPTION,
                               "--gpu-memory needs --gpus N or --gpus all");
      return 0;
    }
    have = count(&why);
    if (have == 0) {
      if (l->gpu_memory != NULL)
        return orion_error_set(err, ORION_EOPTION,
                               "--gpu-memory %s: no GPU usable here: %s",
                               l->gpu_memory, why);
      return 0; /* the CPU default, as without CUDA */
    }
    l->gpus = have;
    snprintf(l->gpus_text, sizeof l->gpus_text, "all");
    *nexec = have;
    snprintf(note, n,
             "%d GPU%s here: one executor per GPU (--executors N for CPU "
             "executors)",
             have, have == 1 ? "" : "s");
    return 0;
  }
  have = count(&why);
  if (have == 0)
    return orion_error_set(err, ORION_EOPTION,
                           "--gpus %s: no GPU usable here: %s", l->gpus_text,
                           why);
  if (l->gpus < 0)
    l->gpus = have;
  if (l->gpus > have) {
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    return orion_error_set(err, ORION_EOPTION,
                           "--gpus %s: only %d GPU%s usable here%s%s%s",
                           l->gpus_text, have, have == 1 ? "" : "s",
                           vis != NULL ? " (CUDA_VISIBLE_DEVICES='" : "",
                           vis != NULL ? vis : "", vis != NULL ? "')" : "");
  }
  if (exec_given && *nexec != l->gpus)
    return orion_error_set(err, ORION_EOPTION,
                           "--gpus %s starts one executor per GPU (%d); "
                           "--executors %d asks for %d",
                           l->gpus_text, l->gpus, *nexec, *nexec);
  *nexec = l->gpus;
  return 0;
}

/* The node-local rank srun or mpirun gives a task, or -1. */
static int local_rank(void) {
  static const char *const vars[] = {"SLURM_LOCALID",
                                     "OMPI_COMM_WORLD_LOCAL_RANK",
                                     "MPI_LOCALRANKID", "PMI_LOCAL_RANK"};
  size_t i;
  for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end;
    long r;
    if (v == NULL || v[0] < '0' || v[0] > '9')
      continue;
    r = strtol(v, &end, 10);
    if (*end == '\0' && r < 65536)
      return (int)r;
  }
  return -1;
}

void orion_launcher_gpu_cmd(const orion_launcher *l, int exec,
                            orion_launch_cmd *cmd) {
  int g = exec;
  cmd->use_gpu = l->gpus != 0;
  cmd->gpu_memory = l->gpus != 0 ? l->gpu_memory : NULL;
  cmd->allow_io = l->allow_io;
  cmd->elastic = l->elastic;
  if (!cmd->use_gpu) {
    cmd->gpu = 0;
    return;
  }
  if (l->kind == ORION_LAUNCH_SSH && exec >= 0 && (size_t)exec < l->hosts.n)
    g = l->hosts.slots[exec].index;
  else if (l->kind == ORION_LAUNCH_SLURM || l->kind == ORION_LAUNCH_MPI) {
    int r = local_rank();
    if (r >= 0)
      g = r;
  }
  if (l->gpus > 0 && l->kind != ORION_LAUNCH_LOCAL)
    g %= l->gpus;
  cmd->gpu = g;
}
