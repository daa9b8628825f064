/* How orion-driver starts its executors: hosts files, executor command
 * lines, ranks from srun/mpirun.  See launch.h; host names, HOST:PORT and
 * tokens are dsm/addr.c. */
#include "drivers/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"

/* The most slots one hosts file may expand to, all lines together. */
#define MAX_TOTAL_SLOTS 65536

/* How much of an offending text a message shows. */
#define SHOW_MAX 64

/* ------------------------------------------------------------------------
 * Small helpers.
 * ---------------------------------------------------------------------- */

/* Copies s[0..n) into dst (dn bytes) for a message: non-printable bytes as
 * \xNN, cut after SHOW_MAX bytes with "...". */
static void show(char *dst, size_t dn, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i, o = 0;
  for (i = 0; i < n && i < SHOW_MAX; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x7f) {
      if (o + 2 > dn)
        break;
      dst[o++] = (char)ch;
    } else {
      if (o + 5 > dn)
        break;
      dst[o++] = '\\';
      dst[o++] = 'x';
      dst[o++] = hex[ch >> 4];
      dst[o++] = hex[ch & 15];
    }
  }
  if (i < n && o + 4 <= dn) {
    memcpy(dst + o, "...", 3);
    o += 3;
  }
  dst[o] = '\0';
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static int is_alnum(char ch) {
  return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* ------------------------------------------------------------------------
 * Hosts files.
 * ---------------------------------------------------------------------- */

/* Appends `count` slots of host to l; count * ... was checked. */
static int add_slots(orion_hostlist *l, size_t *cap, const char *host,
                     int port, int count, int line) {
  int i;
  if (l->n + (size_t)count > *cap) {
    size_t nc = *cap ? *cap : 16;
    orion_host_slot *ns;
    while (nc < l->n + (size_t)count)
      nc *= 2;
    ns = orion_realloc(l->slots, nc * sizeof *ns);
    if (ns == NULL)
      return ORION_ENOMEM;
    l->slots = ns;
    *cap = nc;
  }
  for (i = 0; i < count; i++) {
    orion_host_slot *s = &l->slots[l->n++];
    memset(s, 0, sizeof *s);
    strcpy(s->host, host);
    s->port = port != 0 ? port + i : 0;
    s->index = i;
    s->line = line;
  }
  return 0;
}

/* Parses one line (comment already cut) into l.  Blank lines add nothing. */
static int parse_line(const char *s, size_t n, const char *fname, int line,
                      orion_hostlist *l, size_t *cap, orion_error *err) {
  const char *f[2];
  size_t fl[2], i = 0;
  int nf = 0, port = 0, rc;
  long slots = 1;
  char host[ORION_HOST_MAX + 1];
  char a[SHOW_MAX * 4 + 8], b[SHOW_MAX * 4 + 8];
  const char *pp = NULL;
  size_t pn = 0;

  while (nf < 2) {
    while (i < n && is_blank(s[i]))
      i++;
    if (i == n)
      break;
    f[nf] = s + i;
    while (i < n && !is_blank(s[i]))
      i++;
    fl[nf] = (size_t)(s + i - f[nf]);
    nf++;
  }
  if (nf == 0)
    return 0;
  while (i < n && is_blank(s[i]))
    i++;
  if (i < n) {
    size_t e = n;
    while (e > i && is_blank(s[e - 1]))
      e--;
    show(a, sizeof a, s + i, e - i);
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: unexpected text '%s' after the slot count",
                           fname, line, a);
  }

  show(a, sizeof a, f[0], fl[0]);
  rc = orion_hostport_split(f[0], fl[0], host, sizeof host, &port, &pp, &pn);
  switch (rc) {
  case ORION_HP_OK:
    break;
  case ORION_HP_BAD_PORT:
    show(b, sizeof b, pp, pn);
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: bad port '%s' in '%s' (want 1..65535)",
                           fname, line, b, a);
  case ORION_HP_LONG:
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: host name too long (at most %d bytes) "
                           "in '%s'",
                           fname, line, ORION_HOST_MAX, a);
  case ORION_HP_NO_CLOSE:
    return orion_error_set(err, ORION_EPARSE, "%s:%d: missing ']' in '%s'",
                           fname, line, a);
  case ORION_HP_AFTER_BR:
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: expected ':PORT' after ']' in '%s'", fname,
                           line, a);
  case ORION_HP_BR_NOT_V6:
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: brackets around a host that is not an "
                           "IPv6 address in '%s'",
                           fname, line, a);
  default:
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: bad host '%s' (want a name, an IPv4 "
                           "address or [IPv6])",
                           fname, line, a);
  }

  if (nf == 2) {
    slots = orion_addr_decimal(f[1], fl[1], ORION_HOSTS_MAX_SLOTS);
    if (slots < 1) {
      show(b, sizeof b, f[1], fl[1]);
      return orion_error_set(err, ORION_EPARSE,
                             "%s:%d: bad slots '%s' (want 1..%d)", fname,
                             line, b, ORION_HOSTS_MAX_SLOTS);
    }
  }
  if (port != 0 && port + slots - 1 > 65535)
    return orion_error_set(err, ORION_EPARSE,
                           "%s:%d: %ld slots from port %d need ports up to "
                           "%ld (at most 65535) in '%s'",
                           fname, line, slots, port, port + slots - 1, a);
  if (l->n + (size_t)slots > MAX_TOTAL_SLOTS)
    return orion_error_set(err, ORION_EOVERFLOW,
                           "%s:%d: more than %d executor slots in all", fname,
                           line, MAX_TOTAL_SLOTS);
  if (add_slots(l, cap, host, port, (int)slots, line) != 0)
    return orion_error_set(err, ORION_ENOMEM, "%s:%d: out of memory", fname,
                           line);
  return 0;
}

int orion_hosts_parse(const char *text, size_t len, const char *fname,
                      orion_hostlist *out, orion_error *err) {
  orion_hostlist l = {NULL, 0};
  size_t pos = 0, cap = 0;
  int line = 0, rc;
  if (fname == NULL)
    fname = "hosts";
  out->slots = NULL;
  out->n = 0;
  if (text == NULL && len > 0)
    return orion_error_set(err, ORION_EINVAL, "%s: no text", fname);
  while (pos < len) {
    const char *s = text + pos;
    const char *nl = memchr(s, '\n', len - pos);
    size_t n = nl != NULL ? (size_t)(nl - s) : len - pos;
    const char *hash = memchr(s, '#', n);
    pos += n + (nl != NULL);
    if (line == INT_MAX)
      break;
    line++;
    if (hash != NULL)
      n = (size_t)(hash - s);
    rc = parse_line(s, n, fname, line, &l, &cap, err);
    if (rc != 0) {
      orion_hostlist_free(&l);
      return rc;
    }
  }
  if (l.n == 0)
    return orion_error_set(err, ORION_EPARSE, "%s: no hosts", fname);
  *out = l;
  orion_error_clear(err);
  return 0;
}

int orion_hosts_load(const char *path, orion_hostlist *out,
                     orion_error *err) {
  FILE *f;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int rc;
  out->slots = NULL;
  out->n = 0;
  f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    return orion_error_set(err, -e, "cannot open %s: %s", path, strerror(e));
  }
  for (;;) {
    size_t got;
    if (len == cap) {
      size_t nc = cap ? cap * 2 : 8192;
      char *nb;
      if (cap == ORION_HOSTS_MAX_FILE + 1) {
        orion_free(buf);
        fclose(f);
        return orion_error_set(err, ORION_EOVERFLOW,
                               "%s: hosts file larger than %u bytes", path,
                               ORION_HOSTS_MAX_FILE);
      }
      if (nc > ORION_HOSTS_MAX_FILE + 1)
        nc = ORION_HOSTS_MAX_FILE + 1;
      nb = orion_realloc(buf, nc);
      if (nb == NULL) {
        orion_free(buf);
        fclose(f);
        return orion_error_set(err, ORION_ENOMEM,
                               "cannot read %s: out of memory", path);
      }
      buf = nb;
      cap = nc;
    }
    got = fread(buf + len, 1, cap - len, f);
    if (got == 0)
      break;
    len += got;
  }
  if (ferror(f)) {
    int e = errno != 0 ? errno : EIO;
    orion_free(buf);
    fclose(f);
    return orion_error_set(err, -e, "cannot read %s: %s", path, strerror(e));
  }
  fclose(f);
  rc = orion_hosts_parse(buf, len, path, out, err);
  orion_free(buf);
  return rc;
}

void orion_hostlist_free(orion_hostlist *l) {
  if (l == NULL)
    return;
  orion_free(l->slots);
  l->slots = NULL;
  l->n = 0;
}

/* ------------------------------------------------------------------------
 * Executor command lines.
 * ---------------------------------------------------------------------- */

#define DEFAULT_EXE "orion-executor"

/* The length of NAME in "NAME=VALUE" when NAME is a shell variable name,
 * else 0. */
static size_t env_name_len(const char *e) {
  size_t i;
  if (e == NULL || !(is_alnum(e[0]) || e[0] == '_') || is_digit(e[0]))
    return 0;
  for (i = 1; e[i] != '\0' && e[i] != '='; i++)
    if (!is_alnum(e[i]) && e[i] != '_')
      return 0;
  return e[i] == '=' ? i : 0;
}

int orion_launch_cmd_check(const orion_launch_cmd *c, orion_error *err) {
  char host[ORION_HOST_MAX + 1], a[SHOW_MAX * 4 + 8];
  int port;
  size_t tl, i;
  uint64_t sz;
  if (c == NULL)
    return orion_error_set(err, ORION_EINVAL, "no executor command");
  if (c->exe != NULL && c->exe[0] == '\0')
    return orion_error_set(err, ORION_EINVAL, "empty executor path");
  if (c->driver == NULL)
    return orion_error_set(err, ORION_EINVAL, "no driver address");
  if (orion_hostport_parse(c->driver, host, sizeof host, &port) != 0) {
    show(a, sizeof a, c->driver, strlen(c->driver));
    return orion_error_set(err, ORION_EINVAL,
                           "driver address '%s' is not HOST:PORT", a);
  }
  if (c->token != NULL && c->token[0] == '\0')
    return orion_error_set(err, ORION_EINVAL, "empty token");
  tl = c->token != NULL ? strlen(c->token) : 0;
  if (tl > ORION_TOKEN_MAX)
    return orion_error_set(err, ORION_EINVAL,
                           "token is %zu bytes (at most %u)", tl,
                           (unsigned)ORION_TOKEN_MAX);
  if (c->bind != NULL && c->bind[0] == '\0')
    return orion_error_set(err, ORION_EINVAL, "empty bind address");
  if (c->use_gpu && c->gpu < 0)
    return orion_error_set(err, ORION_EINVAL, "GPU number %d is negative",
                           c->gpu);
  if (c->gpu_memory != NULL &&
      orion_launch_size_parse(c->gpu_memory, "--gpu-memory", &sz, err) != 0)
    return ORION_EINVAL;
  for (i = 0; c->env != NULL && c->env[i] != NULL; i++)
    if (env_name_len(c->env[i]) == 0) {
      show(a, sizeof a, c->env[i], strlen(c->env[i]));
      return orion_error_set(err, ORION_EINVAL,
                             "environment entry '%s' is not NAME=VALUE", a);
    }
  return 0;
}

void orion_shell_quote(orion_buf *out, const char *s) {
  const char *p = s, *q;
  orion_buf_append(out, "'", 1);
  while ((q = strchr(p, '\'')) != NULL) {
    orion_buf_append(out, p, (size_t)(q - p));
    orion_buf_append(out, "'\\''", 4);
    p = q + 1;
  }
  orion_buf_append(out, p, strlen(p));
  orion_buf_append(out, "'", 1);
}

int orion_launch_size_parse(const char *s, const char *what, uint64_t *out,
                            orion_error *err) {
  static const char units[] = "KMGT";
  char *end;
  const char *u;
  double v, scale = 1;
  errno = 0;
  /* Digits and a point only: strtod alone would take "0x10" and "1e9". */
  v = s != NULL && is_digit(s[0]) ? strtod(s, &end) : -1;
  if (v > 0 && end != s + strspn(s, "0123456789."))
    v = -1;
  if (v > 0 && errno == 0 && *end != '\0' &&
      (u = strchr(units, end[0] & ~0x20)) != NULL) {
    scale = (double)(1ull << (10 * (u - units + 1)));
    end++;
    if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
      end += 2;
    else if (end[0] == 'b' || end[0] == 'B')
      end++;
  }
  if (!(v > 0) || errno != 0 || *end != '\0' || v * scale < 1 ||
      v * scale >= 18446744073709551615.0) {
    char a[SHOW_MAX * 4 + 8];
    show(a, sizeof a, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
    return orion_error_set(err, ORION_EINVAL,
                           "%s needs a size such as 256M or 8G, not '%s'",
                           what, a);
  }
  *out = (uint64_t)(v * scale);
  return 0;
}

/* The executor's own words: EXE --driver ADDR [--token T] [--id N]
 * [--bind B] [--gpu G] [--gpu-memory SIZE] [--allow-io] [--elastic]; idbuf holds N's digits, gbuf
 * G's.  Returns the count (at most EXEC_WORDS). */
#define EXEC_WORDS 15
static int exec_words(const orion_launch_cmd *c, const char *w[EXEC_WORDS],
                      char idbuf[16], char gbuf[16]) {
  int n = 0;
  w[n++] = c->exe != NULL ? c->exe : DEFAULT_EXE;
  w[n++] = "--driver";
  w[n++] = c->driver;
  if (c->token != NULL) {
    w[n++] = "--token";
    w[n++] = c->token;
  }
  if (c->id >= 0) {
    snprintf(idbuf, 16, "%d", c->id);
    w[n++] = "--id";
    w[n++] = idbuf;
  }
  if (c->bind != NULL) {
    w[n++] = "--bind";
    w[n++] = c->bind;
  }
  if (c->use_gpu) {
    snprintf(gbuf, 16, "%d", c->gpu);
    w[n++] = "--gpu";
    w[n++] = gbuf;
  }
  if (c->gpu_memory != NULL) {
    w[n++] = "--gpu-memory";
    w[n++] = c->gpu_memory;
  }
  if (c->allow_io)
    w[n++] = "--allow-io";
  if (c->elastic)
    w[n++] = "--elastic";
  return n;
}

/* Appends the quoted command line for c to out (assumed checked). */
/* Whether env entry e is the job's secret (ORION_TOKEN=...), which goes
 * to a remote shell on its standard input, never in its command line. */
static int is_secret(const char *e) {
  return strncmp(e, "ORION_TOKEN=", 12) == 0;
}

/* The words of c as one shell line; with secrets_on_stdin, each secret
 * env entry is read from the shell's standard input instead ("IFS= read
 * -r NAME; export NAME; " in front; orion_launch_ssh_stdin writes the
 * values). */
static void shell_line(const orion_launch_cmd *c, int secrets_on_stdin,
                       orion_buf *out) {
  const char *w[EXEC_WORDS];
  char idbuf[16], gbuf[16];
  int n = exec_words(c, w, idbuf, gbuf), i;
  size_t k;
  for (k = 0; secrets_on_stdin && c->env != NULL && c->env[k] != NULL; k++)
    if (is_secret(c->env[k])) {
      size_t nl = env_name_len(c->env[k]);
      orion_buf_append(out, "IFS= read -r ", 13);
      orion_buf_append(out, c->env[k], nl);
      orion_buf_append(out, "; export ", 9);
      orion_buf_append(out, c->env[k], nl);
      orion_buf_append(out, "; ", 2);
    }
  for (k = 0; c->env != NULL && c->env[k] != NULL; k++) {
    size_t nl = env_name_len(c->env[k]);
    if (secrets_on_stdin && is_secret(c->env[k]))
      continue;
    /* NAME=, unquoted, so the shell takes it as an assignment; a quoted
     * word is never one, so an EXE holding '=' stays the command. */
    orion_buf_append(out, c->env[k], nl + 1);
    orion_shell_quote(out, c->env[k] + nl + 1);
    orion_buf_append(out, " ", 1);
  }
  for (i = 0; i < n; i++) {
    if (i > 0)
      orion_buf_append(out, " ", 1);
    orion_shell_quote(out, w[i]);
  }
}

void orion_launch_argv_free(char **argv) {
  size_t i;
  if (argv == NULL)
    return;
  for (i = 0; argv[i] != NULL; i++)
    orion_free(argv[i]);
  orion_free(argv);
}

/* Makes a NULL-terminated copy of w[0..n); NULL when out of memory. */
static char **argv_dup(const char *const *w, int n) {
  char **v = orion_calloc((size_t)n + 1, sizeof *v);
  int i;
  if (v == NULL)
    return NULL;
  for (i = 0; i < n; i++) {
    v[i] = orion_strdup(w[i]);
    if (v[i] == NULL) {
      orion_launch_argv_free(v);
      return NULL;
    }
  }
  return v;
}

int orion_launch_ssh_argv(const orion_launch_cmd *c, const char *host,
                          char ***argv_out) {
  orion_buf remote;
  const char *w[7];
  char **v;
  *argv_out = NULL;
  if (orion_launch_cmd_check(c, NULL) != 0 || !orion_host_valid(host))
    return ORION_EINVAL;
  orion_buf_init(&remote);
  if (c->cwd != NULL && c->cwd[0] != '\0') {
    orion_buf_append(&remote, "cd ", 3);
    orion_shell_quote(&remote, c->cwd);
    orion_buf_append(&remote, " 2>/dev/null; ", 14);
  }
  shell_line(c, 1, &remote);
  orion_buf_append(&remote, "", 1);
  if (remote.oom) {
    orion_buf_free(&remote);
    return ORION_ENOMEM;
  }
  w[0] = "ssh";
  w[1] = "-o";
  w[2] = "BatchMode=yes";
  w[3] = "-o";
  w[4] = "ConnectTimeout=10";
  w[5] = host;
  w[6] = remote.data;
  v = argv_dup(w, 7);
  orion_buf_free(&remote);
  if (v == NULL)
    return ORION_ENOMEM;
  *argv_out = v;
  return 0;
}

int orion_launch_ssh_stdin(const orion_launch_cmd *c, orion_buf *out) {
  size_t k;
  if (orion_launch_cmd_check(c, NULL) != 0)
    return ORION_EINVAL;
  for (k = 0; c->env != NULL && c->env[k] != NULL; k++)
    if (is_secret(c->env[k])) {
      const char *v = c->env[k] + env_name_len(c->env[k]) + 1;
      if (strchr(v, '\n') != NULL)
        return ORION_EINVAL; /* read takes one line */
      orion_buf_append(out, v, strlen(v));
      orion_buf_append(out, "\n", 1);
    }
  return out->oom ? ORION_ENOMEM : 0;
}

int orion_launch_local_argv(const orion_launch_cmd *c, char ***argv_out) {
  const char *w[EXEC_WORDS];
  char idbuf[16], gbuf[16];
  int n;
  *argv_out = NULL;
  if (orion_launch_cmd_check(c, NULL) != 0)
    return ORION_EINVAL;
  n = exec_words(c, w, idbuf, gbuf);
  *argv_out = argv_dup(w, n);
  return *argv_out != NULL ? 0 : ORION_ENOMEM;
}

int orion_launch_manual_text(const orion_launch_cmd *c, orion_buf *out) {
  if (orion_launch_cmd_check(c, NULL) != 0)
    return ORION_EINVAL;
  shell_line(c, 0, out);
  orion_buf_append(out, "", 1);
  if (out->oom)
    return ORION_ENOMEM;
  out->len--;
  return 0;
}

/* ------------------------------------------------------------------------
 * Ranks from srun or mpirun.
 * ---------------------------------------------------------------------- */

static const char *real_getenv(const char *name, void *ud) {
  return getenv(name);
}

/* Reads variable `name` as a decimal integer 0..INT_MAX into *v. */
static int env_int(orion_getenv_fn get, void *ud, const char *name, int *v,
                   orion_error *err) {
  const char *s = get(name, ud);
  long x;
  char a[SHOW_MAX * 4 + 8];
  if (s == NULL)
    return orion_error_set(err, ORION_EINVAL, "%s is not set", name);
  x = orion_addr_decimal(s, strlen(s), INT_MAX);
  if (x < 0) {
    show(a, sizeof a, s, strlen(s));
    return orion_error_set(err, ORION_EINVAL,
                           "%s='%s' is not a non-negative integer", name, a);
  }
  *v = (int)x;
  return 0;
}

int orion_launch_rank_from_env(orion_rank_env *out, const char *launcher,
                               orion_getenv_fn get, void *ud,
                               orion_error *err) {
  static const char *const mpi_vars[][2] = {
      {"PMI_RANK", "PMI_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}};
  const char *rv = NULL, *sv = NULL, *d, *t;
  char a[SHOW_MAX * 4 + 8];
  size_t i;
  int rc;

  memset(out, 0, sizeof *out);
  if (get == NULL)
    get = real_getenv;
  if (launcher != NULL && strcmp(launcher, "slurm") == 0) {
    rv = "SLURM_PROCID";
    sv = "SLURM_NTASKS";
    if (get(rv, ud) == NULL)
      return orion_error_set(err, ORION_EINVAL,
                             "--launcher slurm: SLURM_PROCID is not set "
                             "(run orion-driver under srun)");
  } else if (launcher != NULL && strcmp(launcher, "mpi") == 0) {
    for (i = 0; i < sizeof mpi_vars / sizeof mpi_vars[0]; i++)
      if (get(mpi_vars[i][0], ud) != NULL) {
        rv = mpi_vars[i][0];
        sv = mpi_vars[i][1];
        break;
      }
    if (rv == NULL)
      return orion_error_set(err, ORION_EINVAL,
                             "--launcher mpi: none of PMI_RANK, "
                             "OMPI_COMM_WORLD_RANK is set (run orion-driver "
                             "under mpirun or mpiexec)");
  } else {
    show(a, sizeof a, launcher != NULL ? launcher : "",
         launcher != NULL ? strlen(launcher) : 0);
    return orion_error_set(err, ORION_EOPTION,
                           "unknown launcher '%s' (want slurm or mpi)", a);
  }
  out->rank_var = rv;
  out->size_var = sv;

  if (get(sv, ud) == NULL)
    return orion_error_set(err, ORION_EINVAL, "--launcher %s: %s is set but "
                           "%s is not", launcher, rv, sv);
  if ((rc = env_int(get, ud, rv, &out->rank, err)) != 0 ||
      (rc = env_int(get, ud, sv, &out->size, err)) != 0)
    return rc;
  if (out->size < 2)
    return orion_error_set(err, ORION_EINVAL,
                           "%s=%d: need at least 2 tasks (rank 0 is the "
                           "driver, ranks 1.. are executors)",
                           sv, out->size);
  if (out->rank >= out->size)
    return orion_error_set(err, ORION_EINVAL,
                           "%s=%d is out of range for %s=%d (want 0..%d)", rv,
                           out->rank, sv, out->size, out->size - 1);

  d = get("ORION_DRIVER", ud);
  if (d == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "ORION_DRIVER is not set: export "
                           "ORION_DRIVER=HOST:PORT (the rank-0 task's "
                           "address) before starting the job");
  if (strlen(d) > ORION_HOSTPORT_MAX ||
      orion_hostport_parse(d, out->driver_host, sizeof out->driver_host,
                           &out->driver_port) != 0) {
    show(a, sizeof a, d, strlen(d));
    return orion_error_set(err, ORION_EINVAL,
                           "ORION_DRIVER='%s' is not HOST:PORT (port "
                           "1..65535; write an IPv6 host as [ADDR]:PORT)",
                           a);
  }
  strcpy(out->driver, d);

  t = get("ORION_TOKEN", ud);
  if (t == NULL)
    return orion_error_set(err, ORION_EINVAL,
                           "ORION_TOKEN is not set: export ORION_TOKEN=... "
                           "(the job's token) before starting the job");
  if ((rc = orion_launch_token_env(t, out->token, sizeof out->token, err)) !=
      0)
    return rc;
  orion_error_clear(err);
  return 0;
}

int orion_launch_token_env(const char *t, char *out, size_t n,
                           orion_error *err) {
  char why[256];
  size_t tl = strlen(t);
  /* The token is a secret: messages never show it. */
  if (tl == 0)
    return orion_error_set(err, ORION_EINVAL, "ORION_TOKEN is empty");
  if (tl > ORION_TOKEN_MAX)
    return orion_error_set(err, ORION_EINVAL,
                           "ORION_TOKEN is %zu bytes (at most %u)", tl,
                           (unsigned)ORION_TOKEN_MAX);
  if (orion_token_check(t, tl, why, sizeof why) != 0)
    return orion_error_set(err, ORION_EINVAL, "ORION_TOKEN %s", why);
  if (tl >= n)
    return orion_error_set(err, ORION_EINVAL,
                           "ORION_TOKEN is %zu bytes (at most %zu)", tl,
                           n - 1);
  memcpy(out, t, tl + 1);
  return 0;
}
