/* Tests of drivers/launch.c, the pure part of starting executors: hosts
 * files (good ones, their slot expansion, and every bad case with its exact
 * FILE:LINE message), HOST:PORT parsing and tokens (dsm/addr.c), the ssh /
 * local / pasted command lines (quoted text checked byte for byte, then
 * split again by /bin/sh to prove the quoting gives back the original
 * arguments), ranks from srun and mpirun environments.  Then the launcher
 * of drivers/launcher.c and the seam through which dsm/cluster.c calls it,
 * with a fake launcher that starts nothing (a listening socket, no
 * executors), and orion-driver's launch options as its command line
 * (getopt_long) reads them. */
#include "t/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "drivers/launch.h"
#include "drivers/launcher.h"
#include "dsm/cluster.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

TestSuite(launch, .timeout = 60);

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

static int parse_str(const char *text, orion_hostlist *l, orion_error *e) {
  return orion_hosts_parse(text, strlen(text), "h.txt", l, e);
}

/* Parses text, expects failure with code and exactly msg; checks nothing
 * leaked and the list was left empty. */
static void bad_hosts(const char *text, int code, const char *msg) {
  orion_hostlist l = {(orion_host_slot *)1, 99};
  orion_error e;
  size_t before = orion_alloc_used();
  int rc = parse_str(text, &l, &e);
  cr_assert_eq(rc, code, "text '%s': rc %d, want %d (%s)", text, rc, code,
               e.msg);
  cr_assert_eq(e.code, code);
  cr_assert_str_eq(e.msg, msg, "text '%s'", text);
  cr_assert_null(l.slots);
  cr_assert_eq(l.n, 0);
  cr_assert_eq(orion_alloc_used(), before);
}

static void check_slot(const orion_hostlist *l, size_t k, const char *host,
                       int port, int index, int line) {
  cr_assert_lt(k, l->n);
  cr_assert_str_eq(l->slots[k].host, host, "slot %zu", k);
  cr_assert_eq(l->slots[k].port, port, "slot %zu port %d", k,
               l->slots[k].port);
  cr_assert_eq(l->slots[k].index, index, "slot %zu", k);
  cr_assert_eq(l->slots[k].line, line, "slot %zu", k);
}

/* Has /bin/sh split `line` (as ssh's remote shell would) by running
 * `printf '%s\0' LINE`; returns the words (malloc'd, NULL-terminated). */
static char **sh_split(const char *line, int *count) {
  char *cmd, *out, **w;
  size_t cap = 4096, len = 0, n, i;
  FILE *p;
  int k = 0;
  cmd = malloc(strlen(line) + 32);
  cr_assert_not_null(cmd);
  sprintf(cmd, "printf '%%s\\0' %s", line);
  p = popen(cmd, "r");
  cr_assert_not_null(p);
  out = malloc(cap);
  while ((n = fread(out + len, 1, cap - len, p)) > 0) {
    len += n;
    if (len == cap)
      out = realloc(out, cap *= 2);
  }
  cr_assert_eq(pclose(p), 0, "sh failed on: %s", cmd);
  free(cmd);
  w = calloc(len + 1, sizeof *w);
  for (i = 0; i < len; i += strlen(out + i) + 1)
    w[k++] = strdup(out + i);
  free(out);
  *count = k;
  return w;
}

static void words_free(char **w) {
  int i;
  for (i = 0; w[i] != NULL; i++)
    free(w[i]);
  free(w);
}

/* Asserts argv (NULL-terminated) equals want[0..n). */
static void assert_argv(char **argv, const char *const *want, int n) {
  int i;
  for (i = 0; i < n; i++) {
    cr_assert_not_null(argv[i], "argv has %d words, want %d", i, n);
    cr_assert_str_eq(argv[i], want[i], "argv[%d]", i);
  }
  cr_assert_null(argv[n], "argv has more than %d words", n);
}

/* Asserts that /bin/sh splits line back into want[0..n). */
static void assert_resplit(const char *line, const char *const *want,
                           int n) {
  int got, i;
  char **w = sh_split(line, &got);
  cr_assert_eq(got, n, "sh split '%s' into %d words, want %d", line, got, n);
  for (i = 0; i < n; i++)
    cr_assert_str_eq(w[i], want[i], "word %d of '%s'", i, line);
  words_free(w);
}

/* A fake environment for the rank tests: NULL-terminated NAME, VALUE
 * pairs. */
static const char *fake_get(const char *name, void *ud) {
  const char *const *kv = ud;
  for (; kv[0] != NULL; kv += 2)
    if (strcmp(kv[0], name) == 0)
      return kv[1];
  return NULL;
}

static int rank_from(const char *launcher, const char *const *kv,
                     orion_rank_env *r, orion_error *e) {
  return orion_launch_rank_from_env(r, launcher, fake_get, (void *)kv, e);
}

static void bad_rank(const char *launcher, const char *const *kv, int code,
                     const char *msg) {
  orion_rank_env r;
  orion_error e;
  int rc = rank_from(launcher, kv, &r, &e);
  cr_assert_eq(rc, code, "rc %d, want %d (%s)", rc, code, e.msg);
  cr_assert_str_eq(e.msg, msg);
}

#define DRV "ORION_DRIVER", "node0:7077"
#define SECRET "s3cret-c485737225c72a3f1a96b5ac94"
#define TOK "ORION_TOKEN", SECRET

/* ------------------------------------------------------------------------
 * Hosts files: good ones.
 * ---------------------------------------------------------------------- */

Test(launch, hosts_single) {
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(parse_str("node1", &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.n, 1);
  check_slot(&l, 0, "node1", 0, 0, 1);
  orion_hostlist_free(&l);
  cr_assert_null(l.slots);
  cr_assert_eq(l.n, 0);
  orion_hostlist_free(&l); /* twice is fine */
}

Test(launch, hosts_mixed_file) {
  const char *text = "# cluster A\n"
                     "\n"
                     "node1\n"
                     "  node2:7100   4   # four executors\n"
                     "\t10.0.0.5\t2\t\n"
                     "[fe80::1%eth0]:7000\n"
                     "::1\n"
                     "[2001:db8::7] 2\r\n"
                     "gpu-3.cluster.example.org:65535\r\n"
                     "node_4#no space before the comment\n"
                     "   # indented comment\n"
                     "last 1"; /* no final newline */
  orion_hostlist l;
  orion_error e;
  size_t before = orion_alloc_used();
  cr_assert_eq(parse_str(text, &l, &e), 0, "%s", e.msg);
  cr_assert_str_eq(e.msg, "");
  cr_assert_eq(l.n, 14, "%zu slots", l.n);
  check_slot(&l, 0, "node1", 0, 0, 3);
  check_slot(&l, 1, "node2", 7100, 0, 4);
  check_slot(&l, 2, "node2", 7101, 1, 4);
  check_slot(&l, 3, "node2", 7102, 2, 4);
  check_slot(&l, 4, "node2", 7103, 3, 4);
  check_slot(&l, 5, "10.0.0.5", 0, 0, 5);
  check_slot(&l, 6, "10.0.0.5", 0, 1, 5);
  check_slot(&l, 7, "fe80::1%eth0", 7000, 0, 6);
  check_slot(&l, 8, "::1", 0, 0, 7);
  check_slot(&l, 9, "2001:db8::7", 0, 0, 8);
  check_slot(&l, 10, "2001:db8::7", 0, 1, 8);
  check_slot(&l, 11, "gpu-3.cluster.example.org", 65535, 0, 9);
  check_slot(&l, 12, "node_4", 0, 0, 10);
  check_slot(&l, 13, "last", 0, 0, 12);
  orion_hostlist_free(&l);
  cr_assert_eq(orion_alloc_used(), before);
}

Test(launch, hosts_mixed_file_count) {
  /* Slots add up over lines: 1+4+2+1+1+2+1+1+1 = 14. */
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(parse_str("a\nb 4\nc 2\nd\ne\nf 2\ng\nh\ni\n", &l, &e), 0);
  cr_assert_eq(l.n, 14);
  orion_hostlist_free(&l);
}

Test(launch, hosts_slot_expansion) {
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(parse_str("a 3\nb:7000 2\na\n", &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.n, 6);
  check_slot(&l, 0, "a", 0, 0, 1);
  check_slot(&l, 1, "a", 0, 1, 1);
  check_slot(&l, 2, "a", 0, 2, 1);
  check_slot(&l, 3, "b", 7000, 0, 2);
  check_slot(&l, 4, "b", 7001, 1, 2);
  check_slot(&l, 5, "a", 0, 0, 3); /* a host may appear again */
  orion_hostlist_free(&l);
}

Test(launch, hosts_limits_accepted) {
  orion_hostlist l;
  orion_error e;
  char text[64];
  snprintf(text, sizeof text, "h:%d %d\n", 65536 - ORION_HOSTS_MAX_SLOTS,
           ORION_HOSTS_MAX_SLOTS);
  cr_assert_eq(parse_str(text, &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.n, ORION_HOSTS_MAX_SLOTS);
  cr_assert_eq(l.slots[l.n - 1].port, 65535);
  orion_hostlist_free(&l);
  cr_assert_eq(parse_str("h:1", &l, &e), 0);
  cr_assert_eq(l.slots[0].port, 1);
  orion_hostlist_free(&l);
  cr_assert_eq(parse_str("[::ffff:10.0.0.1]:9", &l, &e), 0, "%s", e.msg);
  cr_assert_str_eq(l.slots[0].host, "::ffff:10.0.0.1");
  orion_hostlist_free(&l);
  cr_assert_eq(parse_str("[::1]", &l, &e), 0, "%s", e.msg);
  cr_assert_str_eq(l.slots[0].host, "::1");
  cr_assert_eq(l.slots[0].port, 0);
  orion_hostlist_free(&l);
}

Test(launch, hosts_text_not_nul_terminated) {
  const char text[] = {'a', ' ', '2', '\n', 'b', 'X'};
  orion_hostlist l;
  orion_error e;
  /* Only the first 5 bytes: "a 2\nb". */
  cr_assert_eq(orion_hosts_parse(text, 5, "m", &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.n, 3);
  check_slot(&l, 2, "b", 0, 0, 2);
  orion_hostlist_free(&l);
}

Test(launch, hosts_load_file) {
  char *path = tu_write_temp(".hosts", "# two hosts\nnode1 2\nnode2:7000\n");
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(orion_hosts_load(path, &l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.n, 3);
  check_slot(&l, 0, "node1", 0, 0, 2);
  check_slot(&l, 1, "node1", 0, 1, 2);
  check_slot(&l, 2, "node2", 7000, 0, 3);
  orion_hostlist_free(&l);
  unlink(path);
  free(path);
}

/* ------------------------------------------------------------------------
 * Hosts files: bad ones, each with its exact message.
 * ---------------------------------------------------------------------- */

Test(launch, hosts_bad_port) {
  bad_hosts("node0\nnode1:70000\n", ORION_EPARSE,
            "h.txt:2: bad port '70000' in 'node1:70000' (want 1..65535)");
  bad_hosts("node1:0", ORION_EPARSE,
            "h.txt:1: bad port '0' in 'node1:0' (want 1..65535)");
  bad_hosts("node1:", ORION_EPARSE,
            "h.txt:1: bad port '' in 'node1:' (want 1..65535)");
  bad_hosts("# c\n\nnode1:http 2\n", ORION_EPARSE,
            "h.txt:3: bad port 'http' in 'node1:http' (want 1..65535)");
  bad_hosts("node1:-5", ORION_EPARSE,
            "h.txt:1: bad port '-5' in 'node1:-5' (want 1..65535)");
  bad_hosts("node1:99999999999999999999", ORION_EPARSE,
            "h.txt:1: bad port '99999999999999999999' in "
            "'node1:99999999999999999999' (want 1..65535)");
  bad_hosts("[::1]:x", ORION_EPARSE,
            "h.txt:1: bad port 'x' in '[::1]:x' (want 1..65535)");
  bad_hosts("[::1]:", ORION_EPARSE,
            "h.txt:1: bad port '' in '[::1]:' (want 1..65535)");
}

Test(launch, hosts_bad_slots) {
  bad_hosts("node1 0", ORION_EPARSE,
            "h.txt:1: bad slots '0' (want 1..4096)");
  bad_hosts("a\nb\nnode1 -2\n", ORION_EPARSE,
            "h.txt:3: bad slots '-2' (want 1..4096)");
  bad_hosts("node1 2x", ORION_EPARSE,
            "h.txt:1: bad slots '2x' (want 1..4096)");
  bad_hosts("node1 +2", ORION_EPARSE,
            "h.txt:1: bad slots '+2' (want 1..4096)");
  bad_hosts("node1 4097", ORION_EPARSE,
            "h.txt:1: bad slots '4097' (want 1..4096)");
  bad_hosts("node1 four", ORION_EPARSE,
            "h.txt:1: bad slots 'four' (want 1..4096)");
  bad_hosts("node1 :7000", ORION_EPARSE,
            "h.txt:1: bad slots ':7000' (want 1..4096)");
}

Test(launch, hosts_trailing_junk) {
  bad_hosts("node1 2 extra", ORION_EPARSE,
            "h.txt:1: unexpected text 'extra' after the slot count");
  bad_hosts("ok\nnode1 2 extra junk  \t# comment\n", ORION_EPARSE,
            "h.txt:2: unexpected text 'extra junk' after the slot count");
  bad_hosts("node1 2 3\r\n", ORION_EPARSE,
            "h.txt:1: unexpected text '3' after the slot count");
}

Test(launch, hosts_bad_host) {
  bad_hosts("-oProxyCommand=touch", ORION_EPARSE,
            "h.txt:1: bad host '-oProxyCommand=touch' (want a name, an IPv4 "
            "address or [IPv6])");
  bad_hosts("user@node1", ORION_EPARSE,
            "h.txt:1: bad host 'user@node1' (want a name, an IPv4 address "
            "or [IPv6])");
  bad_hosts("999.1.1.1", ORION_EPARSE,
            "h.txt:1: bad host '999.1.1.1' (want a name, an IPv4 address "
            "or [IPv6])");
  bad_hosts(":7000", ORION_EPARSE,
            "h.txt:1: bad host ':7000' (want a name, an IPv4 address or "
            "[IPv6])");
  bad_hosts("no\001de", ORION_EPARSE,
            "h.txt:1: bad host 'no\\x01de' (want a name, an IPv4 address or "
            "[IPv6])");
  bad_hosts("1:2:3", ORION_EPARSE,
            "h.txt:1: bad host '1:2:3' (want a name, an IPv4 address or "
            "[IPv6])");
  bad_hosts("[::1", ORION_EPARSE, "h.txt:1: missing ']' in '[::1'");
  bad_hosts("[::1]7000", ORION_EPARSE,
            "h.txt:1: expected ':PORT' after ']' in '[::1]7000'");
  bad_hosts("[node1]:7000", ORION_EPARSE,
            "h.txt:1: brackets around a host that is not an IPv6 address "
            "in '[node1]:7000'");
  bad_hosts("[fe80::1%]:7000", ORION_EPARSE,
            "h.txt:1: bad host '[fe80::1%]:7000' (want a name, an IPv4 "
            "address or [IPv6])");
  bad_hosts("[::g]:7000", ORION_EPARSE,
            "h.txt:1: bad host '[::g]:7000' (want a name, an IPv4 address "
            "or [IPv6])");
}

Test(launch, hosts_long_host) {
  char text[400], msg[600];
  memset(text, 'a', 256);
  text[256] = '\0';
  snprintf(msg, sizeof msg,
           "h.txt:1: host name too long (at most 255 bytes) in '%.64s...'",
           text);
  bad_hosts(text, ORION_EPARSE, msg);
  text[255] = '\0'; /* 255 bytes: fine */
  {
    orion_hostlist l;
    orion_error e;
    cr_assert_eq(parse_str(text, &l, &e), 0, "%s", e.msg);
    cr_assert_eq(strlen(l.slots[0].host), 255);
    orion_hostlist_free(&l);
  }
}

Test(launch, hosts_port_range_overflow) {
  bad_hosts("h:65535 2", ORION_EPARSE,
            "h.txt:1: 2 slots from port 65535 need ports up to 65536 (at "
            "most 65535) in 'h:65535'");
  bad_hosts("h:65000 4096", ORION_EPARSE,
            "h.txt:1: 4096 slots from port 65000 need ports up to 69095 (at "
            "most 65535) in 'h:65000'");
}

Test(launch, hosts_nul_byte) {
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(orion_hosts_parse("ok\nno\0de\n", 9, "n", &l, &e),
               ORION_EPARSE);
  cr_assert_str_eq(e.msg, "n:2: bad host 'no\\x00de' (want a name, an IPv4 "
                          "address or [IPv6])");
}

Test(launch, hosts_too_many_slots) {
  /* 17 lines of 4096 slots pass the total of 65536. */
  orion_buf b;
  int i;
  orion_buf_init(&b);
  for (i = 0; i < 17; i++)
    orion_buf_append(&b, "h 4096\n", 7);
  orion_buf_append(&b, "", 1);
  bad_hosts(b.data, ORION_EOVERFLOW,
            "h.txt:17: more than 65536 executor slots in all");
  orion_buf_free(&b);
}

Test(launch, hosts_empty) {
  bad_hosts("", ORION_EPARSE, "h.txt: no hosts");
  bad_hosts("# only a comment\n\n   \n\t# another\n", ORION_EPARSE,
            "h.txt: no hosts");
  bad_hosts("\r\n\r\n", ORION_EPARSE, "h.txt: no hosts");
}

Test(launch, hosts_default_fname) {
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(orion_hosts_parse("a 0", 3, NULL, &l, &e), ORION_EPARSE);
  cr_assert_str_eq(e.msg, "hosts:1: bad slots '0' (want 1..4096)");
}

Test(launch, hosts_load_errors) {
  char *path = tu_temp_path(".hosts");
  char want[600];
  orion_hostlist l;
  orion_error e;
  cr_assert_eq(orion_hosts_load(path, &l, &e), -ENOENT);
  snprintf(want, sizeof want, "cannot open %s: %s", path, strerror(ENOENT));
  cr_assert_str_eq(e.msg, want);
  cr_assert_null(l.slots);
  free(path);

  path = tu_write_temp(".hosts", "ok\n\nbad:0\n");
  cr_assert_eq(orion_hosts_load(path, &l, &e), ORION_EPARSE);
  snprintf(want, sizeof want,
           "%s:3: bad port '0' in 'bad:0' (want 1..65535)", path);
  cr_assert_str_eq(e.msg, want);
  unlink(path);
  free(path);

  path = tu_write_temp(".hosts", "");
  cr_assert_eq(orion_hosts_load(path, &l, &e), ORION_EPARSE);
  snprintf(want, sizeof want, "%s: no hosts", path);
  cr_assert_str_eq(e.msg, want);
  unlink(path);
  free(path);
}

/* ------------------------------------------------------------------------
 * HOST:PORT.
 * ---------------------------------------------------------------------- */

Test(launch, hostport_good) {
  static const struct {
    const char *s, *host;
    int port;
  } ok[] = {{"node1:7077", "node1", 7077},
            {"10.0.0.1:1", "10.0.0.1", 1},
            {"a.b-c_d:65535", "a.b-c_d", 65535},
            {"[::1]:7000", "::1", 7000},
            {"[fe80::1%eth0]:80", "fe80::1%eth0", 80},
            {"[2001:db8::1]:443", "2001:db8::1", 443},
            {"localhost:007", "localhost", 7}};
  size_t i;
  for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char host[ORION_HOST_MAX + 1];
    int port = -1;
    cr_assert_eq(orion_hostport_parse(ok[i].s, host, sizeof host, &port), 0,
                 "%s", ok[i].s);
    cr_assert_str_eq(host, ok[i].host);
    cr_assert_eq(port, ok[i].port, "%s", ok[i].s);
  }
}

Test(launch, hostport_bad) {
  static const char *const bad[] = {
      "",         "node1",       "node1:",        "node1:0",
      "node1:65536", ":7000",    "::1:7000",      "[::1]",
      "[::1]:",   "[::1]7000",   "[node1]:7000",  "node1:70 ",
      " node1:70", "node1:+70",  "node1:7a",      "-x:70",
      "a b:70",   "[::1:70",     "999.0.0.1:70",  "[]:70",
      "user@h:70"};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char host[ORION_HOST_MAX + 1];
    int port;
    cr_assert_eq(orion_hostport_parse(bad[i], host, sizeof host, &port),
                 ORION_EINVAL, "'%s' accepted", bad[i]);
  }
}

Test(launch, hostport_small_buffer) {
  char host[6];
  int port;
  cr_assert_eq(orion_hostport_parse("node1:70", host, sizeof host, &port), 0);
  cr_assert_str_eq(host, "node1");
  cr_assert_eq(orion_hostport_parse("node12:70", host, sizeof host, &port),
               ORION_EINVAL);
  cr_assert_eq(orion_hostport_parse(NULL, host, sizeof host, &port),
               ORION_EINVAL);
  cr_assert_eq(orion_hostport_parse("a:1", host, 0, &port), ORION_EINVAL);
}

Test(launch, hostport_format) {
  char out[ORION_HOSTPORT_MAX + 1], host[ORION_HOST_MAX + 1];
  int port;
  cr_assert_eq(orion_hostport_format("node1", 7077, out, sizeof out), 0);
  cr_assert_str_eq(out, "node1:7077");
  cr_assert_eq(orion_hostport_format("fe80::1%eth0", 80, out, sizeof out),
               0);
  cr_assert_str_eq(out, "[fe80::1%eth0]:80");
  cr_assert_eq(orion_hostport_parse(out, host, sizeof host, &port), 0);
  cr_assert_str_eq(host, "fe80::1%eth0");
  cr_assert_eq(port, 80);
  cr_assert_eq(orion_hostport_format("node1", 0, out, sizeof out),
               ORION_EINVAL);
  cr_assert_eq(orion_hostport_format("-x", 1, out, sizeof out), ORION_EINVAL);
  cr_assert_eq(orion_hostport_format("node1", 7077, out, 10), ORION_EINVAL);
  cr_assert_eq(orion_hostport_format("node1", 7077, out, 11), 0);
}

Test(launch, host_valid) {
  cr_assert(orion_host_valid("node1"));
  cr_assert(orion_host_valid("10.1.2.3"));
  cr_assert(orion_host_valid("::1"));
  cr_assert(orion_host_valid("fe80::1%eth0"));
  cr_assert(!orion_host_valid(""));
  cr_assert(!orion_host_valid(NULL));
  cr_assert(!orion_host_valid("-oProxyCommand=x"));
  cr_assert(!orion_host_valid(".node"));
  cr_assert(!orion_host_valid("[::1]"));
  cr_assert(!orion_host_valid("a b"));
  cr_assert(!orion_host_valid("a;b"));
  cr_assert(!orion_host_valid("1.2.3"));
}

/* ------------------------------------------------------------------------
 * Command lines.
 * ---------------------------------------------------------------------- */

Test(launch, ssh_argv_plain) {
  orion_launch_cmd c = {NULL, "10.0.0.1:7077", "abc123", 1, NULL, NULL, NULL,
                        0, 0, NULL, 0, 0};
  static const char *const want[] = {
      "ssh",  "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "node1",
      "'orion-executor' '--driver' '10.0.0.1:7077' '--token' 'abc123' "
      "'--id' '1'"};
  char **argv;
  size_t before = orion_alloc_used();
  cr_assert_eq(orion_launch_ssh_argv(&c, "node1", &argv), 0);
  assert_argv(argv, want, 7);
  orion_launch_argv_free(argv);
  cr_assert_eq(orion_alloc_used(), before);
}

/* --allow-io on the driver reaches every executor's command line. */
Test(launch, ssh_argv_allow_io) {
  orion_launch_cmd c = {NULL, "10.0.0.1:7077", "abc123", 1, NULL, NULL, NULL,
                        0, 0, NULL, 1, 0};
  static const char *const want[] = {
      "ssh",  "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "node1",
      "'orion-executor' '--driver' '10.0.0.1:7077' '--token' 'abc123' "
      "'--id' '1' '--allow-io'"};
  char **argv;
  cr_assert_eq(orion_launch_ssh_argv(&c, "node1", &argv), 0);
  assert_argv(argv, want, 7);
  orion_launch_argv_free(argv);
}

/* --elastic on the driver reaches every executor's command line, after
 * --allow-io (bench/netcluster.sh reads it there). */
Test(launch, ssh_argv_elastic) {
  orion_launch_cmd c = {NULL, "10.0.0.1:7077", "abc123", 1, NULL, NULL, NULL,
                        0, 0, NULL, 1, 1};
  static const char *const want[] = {
      "ssh",  "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "node1",
      "'orion-executor' '--driver' '10.0.0.1:7077' '--token' 'abc123' "
      "'--id' '1' '--allow-io' '--elastic'"};
  char **argv;
  cr_assert_eq(orion_launch_ssh_argv(&c, "node1", &argv), 0);
  assert_argv(argv, want, 7);
  orion_launch_argv_free(argv);
}

Test(launch, ssh_argv_quoting) {
  static const char *const env[] = {"ORION_LUA_PATH=/opt/my lua/?.lua;x",
                                    NULL};
  orion_launch_cmd c = {"/opt/Bob's tools/orion executor",
                        "[::1]:7077",
                        "it's a 'secret' token",
                        12,
                        "0.0.0.0:7100",
                        env, NULL, 0, 0, NULL, 0, 0};
  static const char *const remote =
      "ORION_LUA_PATH='/opt/my lua/?.lua;x' "
      "'/opt/Bob'\\''s tools/orion executor' '--driver' '[::1]:7077' "
      "'--token' 'it'\\''s a '\\''secret'\\'' token' '--id' '12' "
      "'--bind' '0.0.0.0:7100'";
  static const char *const split[] = {
      "ORION_LUA_PATH=/opt/my lua/?.lua;x",
      "/opt/Bob's tools/orion executor",
      "--driver",
      "[::1]:7077",
      "--token",
      "it's a 'secret' token",
      "--id",
      "12",
      "--bind",
      "0.0.0.0:7100"};
  static const char *want[7] = {"ssh", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=10", "fe80::2%eth0", NULL};
  char **argv;
  want[6] = remote;
  cr_assert_eq(orion_launch_ssh_argv(&c, "fe80::2%eth0", &argv), 0);
  assert_argv(argv, want, 7);
  /* The remote shell splits it back into the original words. */
  assert_resplit(argv[6], split, 10);
  orion_launch_argv_free(argv);
}

/* issue 18: the job's secret went into ssh's arguments ("ORION_TOKEN='T'
 * 'EXE' ..."), which `ps` shows on the driver's host (and the remote
 * shell's on the executor's); now the remote shell reads it from its
 * standard input. */
Test(launch, ssh_argv_keeps_the_token_off_command_lines) {
  static const char *const env[] = {"ORION_LUA_PATH=/x/?.lua",
                                    "ORION_TOKEN=0123456789abcdef0123456789abcdef",
                                    NULL};
  orion_launch_cmd c = {"/bin/ex", "10.0.0.1:7077", NULL, 3, NULL, env,
                        NULL, 0, 0, NULL, 0, 0};
  char **argv;
  orion_buf in;
  int i;
  cr_assert_eq(orion_launch_ssh_argv(&c, "node1", &argv), 0);
  for (i = 0; argv[i] != NULL; i++)
    cr_assert_null(strstr(argv[i], "0123456789abcdef"), "%s", argv[i]);
  cr_assert_str_eq(argv[6], "IFS= read -r ORION_TOKEN; export ORION_TOKEN; "
                            "ORION_LUA_PATH='/x/?.lua' '/bin/ex' '--driver' "
                            "'10.0.0.1:7077' '--id' '3'");
  orion_launch_argv_free(argv);
  orion_buf_init(&in);
  cr_assert_eq(orion_launch_ssh_stdin(&c, &in), 0);
  cr_assert_eq(in.len, 33);
  cr_assert(memcmp(in.data, "0123456789abcdef0123456789abcdef\n", 33) == 0);
  orion_buf_free(&in);
}

Test(launch, ssh_argv_hostile_strings) {
  /* Whatever a token or path holds, the shell hands it over unchanged and
   * runs nothing of it. */
  static const char *const hostile[] = {
      "$(touch /tmp/orion-launch-pwned)",
      "`touch /tmp/orion-launch-pwned`",
      "a;touch /tmp/orion-launch-pwned",
      "\"double\" \\back\\slash\\",
      "*",
      "~root",
      "line1\nline2",
      "tab\there",
      "'",
      "''",
      "'\\''",
      "!$&|<>(){}[]#=%",
      "-x"};
  size_t i;
  for (i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    const char *envv[2];
    char envbuf[128];
    orion_launch_cmd c = {hostile[i], "h:1", hostile[i], 0,
                          hostile[i], envv,    NULL, 0, 0, NULL, 0, 0};
    const char *split[10];
    char **argv;
    snprintf(envbuf, sizeof envbuf, "X=%s", hostile[i]);
    envv[0] = envbuf;
    envv[1] = NULL;
    split[0] = envbuf;
    split[1] = hostile[i];
    split[2] = "--driver";
    split[3] = "h:1";
    split[4] = "--token";
    split[5] = hostile[i];
    split[6] = "--id";
    split[7] = "0";
    split[8] = "--bind";
    split[9] = hostile[i];
    cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), 0, "%s", hostile[i]);
    assert_resplit(argv[6], split, 10);
    orion_launch_argv_free(argv);
  }
  cr_assert_neq(access("/tmp/orion-launch-pwned", F_OK), 0,
                "a quoted string ran a command");
}

Test(launch, ssh_argv_optional_parts) {
  /* id < 0 and no bind: neither --id nor --bind. */
  orion_launch_cmd c = {"exe", "h:1", "t", -1, NULL, NULL, NULL, 0, 0, NULL, 0, 0};
  char **argv;
  cr_assert_eq(orion_launch_ssh_argv(&c, "10.0.0.9", &argv), 0);
  cr_assert_str_eq(argv[5], "10.0.0.9");
  cr_assert_str_eq(argv[6], "'exe' '--driver' 'h:1' '--token' 't'");
  cr_assert_null(argv[7]);
  orion_launch_argv_free(argv);
}

Test(launch, ssh_argv_invalid) {
  orion_launch_cmd good = {NULL, "h:1", "t", 1, NULL, NULL, NULL, 0, 0, NULL, 0, 0};
  orion_launch_cmd c;
  static const char *const bad_env[] = {"1X=y", NULL};
  static const char *const no_eq[] = {"NOEQUALS", NULL};
  static const char *const bad_name[] = {"A-B=1", NULL};
  char **argv = (char **)1;
  char long_token[ORION_TOKEN_MAX + 2];
  cr_assert_eq(orion_launch_ssh_argv(&good, "-oProxyCommand=x", &argv),
               ORION_EINVAL);
  cr_assert_null(argv);
  cr_assert_eq(orion_launch_ssh_argv(&good, "", &argv), ORION_EINVAL);
  cr_assert_eq(orion_launch_ssh_argv(&good, "[::1]", &argv), ORION_EINVAL);
  cr_assert_eq(orion_launch_ssh_argv(&good, NULL, &argv), ORION_EINVAL);
  cr_assert_eq(orion_launch_ssh_argv(NULL, "h", &argv), ORION_EINVAL);
  c = good;
  c.driver = "h";
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  c = good;
  c.driver = NULL;
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  c = good;
  c.token = "";
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  memset(long_token, 'x', ORION_TOKEN_MAX + 1);
  long_token[ORION_TOKEN_MAX + 1] = '\0';
  c = good;
  c.token = long_token;
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  long_token[ORION_TOKEN_MAX] = '\0'; /* exactly the limit: fine */
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), 0);
  orion_launch_argv_free(argv);
  c = good;
  c.exe = "";
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  c = good;
  c.bind = "";
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  c = good;
  c.env = bad_env;
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  c.env = no_eq;
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
  c.env = bad_name;
  cr_assert_eq(orion_launch_ssh_argv(&c, "h", &argv), ORION_EINVAL);
}

/* Without a token the command carries none: the executor reads
 * $ORION_TOKEN, which the manual text sets in front of it. */
Test(launch, token_from_the_environment) {
  static const char *const env[] = {"ORION_TOKEN=s3cret", NULL};
  orion_launch_cmd c = {"/bin/ex", "h:1", NULL, 2, NULL, env, NULL, 0, 0, NULL, 0, 0};
  orion_buf b;
  char **argv = NULL;
  int i;
  cr_assert_eq(orion_launch_cmd_check(&c, NULL), 0);
  cr_assert_eq(orion_launch_local_argv(&c, &argv), 0);
  for (i = 0; argv[i] != NULL; i++)
    cr_assert_str_neq(argv[i], "--token");
  cr_assert_eq(i, 5); /* exe --driver h:1 --id 2 */
  orion_launch_argv_free(argv);
  orion_buf_init(&b);
  cr_assert_eq(orion_launch_manual_text(&c, &b), 0);
  cr_assert_str_eq(b.data,
                   "ORION_TOKEN='s3cret' '/bin/ex' '--driver' 'h:1' '--id' '2'");
  orion_buf_free(&b);
}

Test(launch, cmd_check_messages) {
  orion_launch_cmd c = {NULL, "nohost", "t", 1, NULL, NULL, NULL, 0, 0, NULL, 0, 0};
  static const char *const env[] = {"OK=1", "bad name=2", NULL};
  orion_error e;
  cr_assert_eq(orion_launch_cmd_check(&c, &e), ORION_EINVAL);
  cr_assert_str_eq(e.msg, "driver address 'nohost' is not HOST:PORT");
  c.driver = "h:1";
  c.token = "";
  cr_assert_eq(orion_launch_cmd_check(&c, &e), ORION_EINVAL);
  cr_assert_str_eq(e.msg, "empty token");
  c.token = "t";
  c.env = env;
  cr_assert_eq(orion_launch_cmd_check(&c, &e), ORION_EINVAL);
  cr_assert_str_eq(e.msg, "environment entry 'bad name=2' is not NAME=VALUE");
  c.env = NULL;
  cr_assert_eq(orion_launch_cmd_check(&c, &e), 0);
}

Test(launch, local_argv) {
  static const char *const env[] = {"ORION_LUA_PATH=/x/?.lua", NULL};
  orion_launch_cmd c = {"./orion-executor", "127.0.0.1:7077", "tok en", 2,
                        "127.0.0.1:0", env, NULL, 0, 0, NULL, 0, 0};
  static const char *const want[] = {
      "./orion-executor", "--driver", "127.0.0.1:7077", "--token", "tok en",
      "--id", "2", "--bind", "127.0.0.1:0"};
  static const char *const want_min[] = {"orion-executor", "--driver",
                                         "h:9", "--token", "t"};
  orion_launch_cmd m = {NULL, "h:9", "t", -1, NULL, NULL, NULL, 0, 0, NULL, 0, 0};
  char **argv;
  size_t before = orion_alloc_used();
  cr_assert_eq(orion_launch_local_argv(&c, &argv), 0);
  assert_argv(argv, want, 9); /* env is not in the argv */
  orion_launch_argv_free(argv);
  cr_assert_eq(orion_launch_local_argv(&m, &argv), 0);
  assert_argv(argv, want_min, 5);
  orion_launch_argv_free(argv);
  m.driver = "bad";
  argv = (char **)1;
  cr_assert_eq(orion_launch_local_argv(&m, &argv), ORION_EINVAL);
  cr_assert_null(argv);
  orion_launch_argv_free(NULL);
  cr_assert_eq(orion_alloc_used(), before);
}

Test(launch, manual_text) {
  static const char *const env[] = {"ORION_LUA_PATH=/x/?.lua", "A_1=", NULL};
  orion_launch_cmd c = {NULL, "node0:7077", "ab'cd", 3, NULL, env, NULL,
                        0, 0, NULL, 0, 0};
  static const char *const split[] = {
      "ORION_LUA_PATH=/x/?.lua", "A_1=", "orion-executor", "--driver",
      "node0:7077", "--token", "ab'cd", "--id", "3"};
  orion_buf b;
  char **argv;
  size_t before = orion_alloc_used();
  orion_buf_init(&b);
  cr_assert_eq(orion_launch_manual_text(&c, &b), 0);
  cr_assert_str_eq(b.data,
                   "ORION_LUA_PATH='/x/?.lua' A_1='' 'orion-executor' "
                   "'--driver' 'node0:7077' '--token' 'ab'\\''cd' '--id' "
                   "'3'");
  cr_assert_eq(b.len, strlen(b.data));
  assert_resplit(b.data, split, 9);
  /* The pasted line is exactly what ssh runs remotely. */
  cr_assert_eq(orion_launch_ssh_argv(&c, "node1", &argv), 0);
  cr_assert_str_eq(argv[6], b.data);
  orion_launch_argv_free(argv);
  /* It appends. */
  orion_buf_free(&b);
  orion_buf_init(&b);
  orion_buf_append(&b, "$ ", 2);
  c.env = NULL;
  cr_assert_eq(orion_launch_manual_text(&c, &b), 0);
  cr_assert_str_eq(b.data, "$ 'orion-executor' '--driver' 'node0:7077' "
                           "'--token' 'ab'\\''cd' '--id' '3'");
  b.len = 0;
  c.token = NULL; /* then none on the line: the executor reads $ORION_TOKEN */
  cr_assert_eq(orion_launch_manual_text(&c, &b), 0);
  cr_assert_str_eq(b.data, "'orion-executor' '--driver' 'node0:7077' "
                           "'--id' '3'");
  orion_buf_free(&b);
  cr_assert_eq(orion_alloc_used(), before);
}

Test(launch, manual_text_runs_as_env) {
  /* The NAME='VALUE' prefix really sets the executor's environment: run
   * the line with `env` as the executable and look for the variable. */
  static const char *const env[] = {"ORION_T_VAR=it's here", NULL};
  orion_launch_cmd c = {"env", "h:1", "t", -1, NULL, env, NULL, 0, 0, NULL, 0, 0};
  orion_buf b;
  char *cmd, line[256];
  FILE *p;
  int found = 0;
  orion_buf_init(&b);
  cr_assert_eq(orion_launch_manual_text(&c, &b), 0);
  /* env rejects the executor's options; run it as `env` alone instead by
   * cutting the line after the executable. */
  cmd = strstr(b.data, " '--driver'");
  cr_assert_not_null(cmd);
  *cmd = '\0';
  p = popen(b.data, "r");
  cr_assert_not_null(p);
  while (fgets(line, sizeof line, p) != NULL)
    if (strcmp(line, "ORION_T_VAR=it's here\n") == 0)
      found = 1;
  pclose(p);
  cr_assert(found, "variable not set by: %s", b.data);
  orion_buf_free(&b);
}

Test(launch, shell_quote) {
  orion_buf b;
  orion_buf_init(&b);
  orion_shell_quote(&b, "");
  orion_shell_quote(&b, "a b");
  orion_shell_quote(&b, "'");
  orion_shell_quote(&b, "it's");
  orion_buf_append(&b, "", 1);
  cr_assert_str_eq(b.data, "'''a b'''\\''''it'\\''s'");
  orion_buf_free(&b);
}

/* ------------------------------------------------------------------------
 * Ranks from srun / mpirun.
 * ---------------------------------------------------------------------- */

Test(launch, rank_slurm) {
  static const char *const kv[] = {"SLURM_PROCID", "3", "SLURM_NTASKS", "4",
                                   DRV, TOK, NULL};
  orion_rank_env r;
  orion_error e;
  cr_assert_eq(rank_from("slurm", kv, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.rank, 3);
  cr_assert_eq(r.size, 4);
  cr_assert_str_eq(r.rank_var, "SLURM_PROCID");
  cr_assert_str_eq(r.size_var, "SLURM_NTASKS");
  cr_assert_str_eq(r.driver, "node0:7077");
  cr_assert_str_eq(r.driver_host, "node0");
  cr_assert_eq(r.driver_port, 7077);
  cr_assert_str_eq(r.token, SECRET);
}

Test(launch, rank_slurm_driver_rank) {
  static const char *const kv[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2",
                                   "ORION_DRIVER", "[fe80::1%ib0]:7077", TOK,
                                   NULL};
  orion_rank_env r;
  orion_error e;
  cr_assert_eq(rank_from("slurm", kv, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.rank, 0);
  cr_assert_eq(r.size, 2);
  cr_assert_str_eq(r.driver, "[fe80::1%ib0]:7077");
  cr_assert_str_eq(r.driver_host, "fe80::1%ib0");
  cr_assert_eq(r.driver_port, 7077);
}

Test(launch, rank_mpi_pmi) {
  /* PMI_* wins over OMPI_* when both are set. */
  static const char *const kv[] = {"PMI_RANK", "1", "PMI_SIZE", "8",
                                   "OMPI_COMM_WORLD_RANK", "5",
                                   "OMPI_COMM_WORLD_SIZE", "6", DRV, TOK,
                                   NULL};
  orion_rank_env r;
  orion_error e;
  cr_assert_eq(rank_from("mpi", kv, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.rank, 1);
  cr_assert_eq(r.size, 8);
  cr_assert_str_eq(r.rank_var, "PMI_RANK");
  cr_assert_str_eq(r.size_var, "PMI_SIZE");
}

Test(launch, rank_mpi_ompi) {
  static const char *const kv[] = {"OMPI_COMM_WORLD_RANK", "5",
                                   "OMPI_COMM_WORLD_SIZE", "6",
                                   "SLURM_PROCID", "0", "SLURM_NTASKS", "1",
                                   DRV, TOK, NULL};
  orion_rank_env r;
  orion_error e;
  cr_assert_eq(rank_from("mpi", kv, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(r.rank, 5);
  cr_assert_eq(r.size, 6);
  cr_assert_str_eq(r.rank_var, "OMPI_COMM_WORLD_RANK");
}

Test(launch, rank_missing) {
  static const char *const none[] = {DRV, TOK, NULL};
  static const char *const no_ntasks[] = {"SLURM_PROCID", "1", DRV, TOK,
                                          NULL};
  static const char *const no_pmi_size[] = {"PMI_RANK", "1", DRV, TOK, NULL};
  static const char *const no_ompi_size[] = {"OMPI_COMM_WORLD_RANK", "1",
                                             DRV, TOK, NULL};
  bad_rank("slurm", none, ORION_EINVAL,
           "--launcher slurm: SLURM_PROCID is not set (run orion-driver "
           "under srun)");
  bad_rank("slurm", no_ntasks, ORION_EINVAL,
           "--launcher slurm: SLURM_PROCID is set but SLURM_NTASKS is not");
  bad_rank("mpi", none, ORION_EINVAL,
           "--launcher mpi: none of PMI_RANK, OMPI_COMM_WORLD_RANK is set "
           "(run orion-driver under mpirun or mpiexec)");
  bad_rank("mpi", no_pmi_size, ORION_EINVAL,
           "--launcher mpi: PMI_RANK is set but PMI_SIZE is not");
  bad_rank("mpi", no_ompi_size, ORION_EINVAL,
           "--launcher mpi: OMPI_COMM_WORLD_RANK is set but "
           "OMPI_COMM_WORLD_SIZE is not");
}

Test(launch, rank_malformed) {
  static const struct {
    const char *rank, *size, *msg;
  } cases[] = {
      {"abc", "4", "SLURM_PROCID='abc' is not a non-negative integer"},
      {"-1", "4", "SLURM_PROCID='-1' is not a non-negative integer"},
      {"", "4", "SLURM_PROCID='' is not a non-negative integer"},
      {" 1", "4", "SLURM_PROCID=' 1' is not a non-negative integer"},
      {"1 ", "4", "SLURM_PROCID='1 ' is not a non-negative integer"},
      {"0x1", "4", "SLURM_PROCID='0x1' is not a non-negative integer"},
      {"1", "4(x2)", "SLURM_NTASKS='4(x2)' is not a non-negative integer"},
      {"1", "99999999999",
       "SLURM_NTASKS='99999999999' is not a non-negative integer"},
      {"1", "\n", "SLURM_NTASKS='\\x0a' is not a non-negative integer"},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *kv[] = {"SLURM_PROCID", cases[i].rank, "SLURM_NTASKS",
                        cases[i].size, DRV, TOK, NULL};
    bad_rank("slurm", kv, ORION_EINVAL, cases[i].msg);
  }
}

Test(launch, rank_out_of_range) {
  static const char *const eq[] = {"SLURM_PROCID", "4", "SLURM_NTASKS", "4",
                                   DRV, TOK, NULL};
  static const char *const one[] = {"PMI_RANK", "0", "PMI_SIZE", "1", DRV,
                                    TOK, NULL};
  static const char *const zero[] = {"OMPI_COMM_WORLD_RANK", "0",
                                     "OMPI_COMM_WORLD_SIZE", "0", DRV, TOK,
                                     NULL};
  bad_rank("slurm", eq, ORION_EINVAL,
           "SLURM_PROCID=4 is out of range for SLURM_NTASKS=4 (want 0..3)");
  bad_rank("mpi", one, ORION_EINVAL,
           "PMI_SIZE=1: need at least 2 tasks (rank 0 is the driver, ranks "
           "1.. are executors)");
  bad_rank("mpi", zero, ORION_EINVAL,
           "OMPI_COMM_WORLD_SIZE=0: need at least 2 tasks (rank 0 is the "
           "driver, ranks 1.. are executors)");
}

Test(launch, rank_driver_and_token) {
  static const char *const no_drv[] = {"SLURM_PROCID", "1", "SLURM_NTASKS",
                                       "2", TOK, NULL};
  static const char *const bad_drv[] = {"SLURM_PROCID", "1", "SLURM_NTASKS",
                                        "2", "ORION_DRIVER", "node0", TOK,
                                        NULL};
  static const char *const v6_drv[] = {"SLURM_PROCID", "1", "SLURM_NTASKS",
                                       "2", "ORION_DRIVER", "::1:7077", TOK,
                                       NULL};
  static const char *const no_tok[] = {"SLURM_PROCID", "1", "SLURM_NTASKS",
                                       "2", DRV, NULL};
  static const char *const empty_tok[] = {"SLURM_PROCID", "1",
                                          "SLURM_NTASKS", "2", DRV,
                                          "ORION_TOKEN", "", NULL};
  static const char *const short_tok[] = {"SLURM_PROCID", "1",
                                          "SLURM_NTASKS", "2", DRV,
                                          "ORION_TOKEN", "s3cret", NULL};
  static const char *const weak_tok[] = {
      "SLURM_PROCID", "1", "SLURM_NTASKS", "2", DRV, "ORION_TOKEN",
      "00000000000000000000000000000000", NULL};
  char long_tok[ORION_TOKEN_MAX + 2 + ORION_TOKEN_HEX_LEN];
  size_t k;
  const char *long_kv[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "2", DRV,
                           "ORION_TOKEN", long_tok, NULL};
  orion_rank_env r;
  orion_error e;
  bad_rank("slurm", no_drv, ORION_EINVAL,
           "ORION_DRIVER is not set: export ORION_DRIVER=HOST:PORT (the "
           "rank-0 task's address) before starting the job");
  bad_rank("slurm", bad_drv, ORION_EINVAL,
           "ORION_DRIVER='node0' is not HOST:PORT (port 1..65535; write an "
           "IPv6 host as [ADDR]:PORT)");
  bad_rank("slurm", v6_drv, ORION_EINVAL,
           "ORION_DRIVER='::1:7077' is not HOST:PORT (port 1..65535; write "
           "an IPv6 host as [ADDR]:PORT)");
  bad_rank("slurm", no_tok, ORION_EINVAL,
           "ORION_TOKEN is not set: export ORION_TOKEN=... (the job's "
           "token) before starting the job");
  bad_rank("slurm", empty_tok, ORION_EINVAL, "ORION_TOKEN is empty");
  /* A short secret is refused (issue 18): anyone who can reach the driver
   * could guess it. */
  bad_rank("slurm", short_tok, ORION_EINVAL,
           "ORION_TOKEN is 6 characters; a job's secret needs at least 128 "
           "bits: 32 or more characters, such as the 32 hex digits of "
           "`openssl rand -hex 16`");
  bad_rank("slurm", weak_tok, ORION_EINVAL,
           "ORION_TOKEN is mostly runs, sequences and repeats (such as "
           "0123..., aaaa... or a part written twice): about 8 bits where a "
           "job's secret needs at least 128; make one with `openssl rand "
           "-hex 16`");
  /* Random hex digits (a run of one letter would be refused as
   * guessable before its length is looked at). */
  for (k = 0; k <= ORION_TOKEN_MAX; k += ORION_TOKEN_HEX_LEN)
    cr_assert_eq(orion_token_new(long_tok + k, ORION_TOKEN_HEX_LEN + 1), 0);
  long_tok[ORION_TOKEN_MAX + 1] = '\0';
  bad_rank("slurm", long_kv, ORION_EINVAL,
           "ORION_TOKEN is 257 bytes (at most 256)");
  long_tok[ORION_TOKEN_MAX] = '\0';
  cr_assert_eq(rank_from("slurm", long_kv, &r, &e), 0, "%s", e.msg);
  cr_assert_str_eq(r.token, long_tok);
}

Test(launch, rank_unknown_launcher) {
  static const char *const kv[] = {NULL};
  bad_rank("pbs", kv, ORION_EOPTION,
           "unknown launcher 'pbs' (want slurm or mpi)");
  bad_rank(NULL, kv, ORION_EOPTION, "unknown launcher '' (want slurm or mpi)");
}

Test(launch, rank_real_environment) {
  orion_rank_env r;
  orion_error e;
  /* Each criterion test runs in its own process: setenv is safe here. */
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  setenv("ORION_DRIVER", "127.0.0.1:9000", 1);
  setenv("ORION_TOKEN", "750c6f1d047ed9ea4dd0b84e23a1d14f", 1);
  cr_assert_eq(orion_launch_rank_from_env(&r, "mpi", NULL, NULL, &e), 0,
               "%s", e.msg);
  cr_assert_eq(r.rank, 2);
  cr_assert_eq(r.size, 3);
  cr_assert_eq(r.driver_port, 9000);
  cr_assert_str_eq(r.token, "750c6f1d047ed9ea4dd0b84e23a1d14f");
}

/* ------------------------------------------------------------------------
 * Tokens.
 * ---------------------------------------------------------------------- */

#define NTOK 2000

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(launch, token_format_and_uniqueness) {
  static char toks[NTOK][ORION_TOKEN_HEX_LEN + 1];
  static char *ptr[NTOK];
  int i, j, seen[16] = {0};
  for (i = 0; i < NTOK; i++) {
    cr_assert_eq(orion_token_new(toks[i], sizeof toks[i]), 0);
    cr_assert_eq(strlen(toks[i]), ORION_TOKEN_HEX_LEN);
    for (j = 0; j < ORION_TOKEN_HEX_LEN; j++) {
      char ch = toks[i][j];
      cr_assert((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'),
                "bad char in %s", toks[i]);
      seen[ch <= '9' ? ch - '0' : ch - 'a' + 10] = 1;
    }
    ptr[i] = toks[i];
  }
  qsort(ptr, NTOK, sizeof ptr[0], cmp_str);
  for (i = 1; i < NTOK; i++)
    cr_assert_str_neq(ptr[i - 1], ptr[i], "duplicate token");
  for (j = 0; j < 16; j++)
    cr_assert(seen[j], "hex digit %d never appeared", j);
}

Test(launch, token_small_buffer) {
  char out[ORION_TOKEN_HEX_LEN + 1];
  memset(out, 'z', sizeof out);
  cr_assert_eq(orion_token_new(out, ORION_TOKEN_HEX_LEN), ORION_EINVAL);
  cr_assert_eq(out[0], '\0');
  cr_assert_eq(orion_token_new(NULL, 64), ORION_EINVAL);
  cr_assert_eq(orion_token_new(out, sizeof out), 0);
  cr_assert_eq(strlen(out), ORION_TOKEN_HEX_LEN);
}

Test(launch, token_accepted_everywhere) {
  /* A generated token is a valid --token and ORION_TOKEN. */
  char tok[ORION_TOKEN_HEX_LEN + 1];
  orion_launch_cmd c = {NULL, "h:1", tok, 1, NULL, NULL, NULL, 0, 0, NULL, 0, 0};
  const char *kv[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "2", DRV,
                      "ORION_TOKEN", tok, NULL};
  orion_rank_env r;
  orion_error e;
  cr_assert_eq(orion_token_new(tok, sizeof tok), 0);
  cr_assert_eq(orion_launch_cmd_check(&c, &e), 0);
  cr_assert_eq(rank_from("slurm", kv, &r, &e), 0);
  cr_assert_str_eq(r.token, tok);
}

/* issue 32: the handshake lets anyone who connects test guesses of the
 * token offline, so a user's token that is long enough but guessable is
 * refused: the docs' own example among them. */
static void expect_guessable(const char *tok, const char *bits) {
  char why[256], want[256];
  cr_expect_eq(orion_token_check(tok, strlen(tok), why, sizeof why),
               ORION_EINVAL, "'%s' accepted", tok);
  snprintf(want, sizeof want,
           "is mostly runs, sequences and repeats (such as 0123..., aaaa... "
           "or a part written twice): about %s bits where a job's secret "
           "needs at least 128; make one with `openssl rand -hex 16`",
           bits);
  cr_expect_str_eq(why, want, "for '%s'", tok);
  cr_expect(strstr(why, tok) == NULL, "the message shows the token");
}

Test(launch, token_check_refuses_guessable_secrets) {
  char why[256];
  expect_guessable("0123456789abcdef0123456789abcdef", "20");
  expect_guessable("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "8");
  expect_guessable("00000000000000000000000000000000", "8");
  expect_guessable("12345678901234567890123456789012", "20");
  expect_guessable("abcdefghijklmnopqrstuvwxyz012345", "21");
  expect_guessable("passwordpasswordpasswordpassword", "42");
  expect_guessable("Summer2024Summer2024Summer2024!!", "85");
  expect_guessable("fedcba9876543210FEDCBA9876543210", "42");
  /* Too short stays the first complaint. */
  cr_expect_eq(orion_token_check("letmein", 7, why, sizeof why),
               ORION_EINVAL);
  cr_expect_str_eq(why, "is 7 characters; a job's secret needs at least 128 "
                        "bits: 32 or more characters, such as the 32 hex "
                        "digits of `openssl rand -hex 16`");
}

Test(launch, token_check_accepts_random_secrets) {
  static const char *const ok[] = {
      "7f3a9c1e5d2b48a6b0c4e8f1a3d5c7e9",     /* openssl rand -hex 16 */
      "37947021773073486669975714012895",     /* hex that is all digits */
      "cGwIsGtNfsdDR7oNeL6aHiRfSaiPFN5A",     /* openssl rand -base64 24 */
      "C713E8480882ADB58FA7F30E26BEFD8C",     /* upper-case hex */
      "s3cret-c485737225c72a3f1a96b5ac94", NULL};
  char why[256], tok[ORION_TOKEN_HEX_LEN + 1];
  int i;
  for (i = 0; ok[i] != NULL; i++)
    cr_expect_eq(orion_token_check(ok[i], strlen(ok[i]), why, sizeof why), 0,
                 "'%s' refused: %s", ok[i], why);
  /* The margin holds for what the driver makes (none of 3 million was
   * refused when this was written): 100,000 in a fraction of a second. */
  for (i = 0; i < 100000; i++) {
    cr_assert_eq(orion_token_new(tok, sizeof tok), 0);
    cr_assert_eq(orion_token_check(tok, strlen(tok), why, sizeof why), 0,
                 "a random token refused: %s: %s", tok, why);
  }
}

/* issue 32: the executor refuses the docs' old example token, which is
 * long enough but guessable, before it connects anywhere. */
Test(launch, executor_refuses_a_guessable_secret) {
  const char *exe = getenv("ORION_EXECUTOR");
  char *argv[] = {(char *)exe, "--driver", "127.0.0.1:9", NULL};
  tu_run r;
  cr_assert_not_null(exe, "ORION_EXECUTOR is not set (make check sets it)");
  setenv("ORION_TOKEN", "0123456789abcdef0123456789abcdef", 1);
  r = tu_run_argv(argv, 20);
  cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_expect_str_eq(r.err, "orion-executor: the token (--token or "
                          "$ORION_TOKEN) is mostly runs, sequences and "
                          "repeats (such as 0123..., aaaa... or a part "
                          "written twice): about 20 bits where a job's "
                          "secret needs at least 128; make one with "
                          "`openssl rand -hex 16`\n");
  tu_run_free(&r);
  unsetenv("ORION_TOKEN");
}

/* ------------------------------------------------------------------------
 * The launcher and the cluster's launch callback.
 * ---------------------------------------------------------------------- */

/* issue 18: a driver whose executors run elsewhere listened on 0.0.0.0;
 * now on the address facing them, every address only when --listen asks
 * for it. */
Test(launch, launcher_attach_sets_the_callback_and_listen_default) {
  orion_launcher l;
  orion_cluster_opts o;
  orion_error e;
  char route[ORION_HOST_MAX + 1], path[] = "/tmp/orion-hosts-XXXXXX";
  int fd;
  orion_launcher_init(&l);
  orion_cluster_opts_init(&o);
  orion_launcher_attach(&l, &o);
  cr_assert(o.launch == orion_launcher_start && o.launch_ud == &l);
  cr_assert_eq(orion_launcher_bind(&l, &o, &e), 0);
  cr_assert_null(o.listen); /* local: the cluster's 127.0.0.1 */
  /* manual: the default route's address, else 127.0.0.1 */
  l.kind = ORION_LAUNCH_MANUAL;
  if (orion_launcher_facing("192.0.2.1", route, sizeof route) != 0 &&
      orion_launcher_facing("2001:db8::1", route, sizeof route) != 0)
    snprintf(route, sizeof route, "127.0.0.1");
  cr_assert_eq(orion_launcher_bind(&l, &o, &e), 0);
  cr_assert_str_eq(o.listen, route);
  cr_assert_str_neq(o.listen, "0.0.0.0");
  o.listen = "0.0.0.0"; /* --listen wins */
  cr_assert_eq(orion_launcher_bind(&l, &o, &e), 0);
  cr_assert_str_eq(o.listen, "0.0.0.0");
  /* ssh: the address the hosts are reached from */
  fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, "127.0.0.1 2\nlocalhost\n", 22), 22);
  close(fd);
  l.kind = ORION_LAUNCH_SSH;
  l.hosts_file = path;
  cr_assert_eq(orion_launcher_load_hosts(&l, &e), 0, "%s", e.msg);
  o.listen = NULL;
  cr_assert_eq(orion_launcher_bind(&l, &o, &e), 0, "%s", e.msg);
  cr_assert(strcmp(o.listen, "127.0.0.1") == 0 ||
                strcmp(o.listen, "::1") == 0,
            "%s", o.listen);
  /* Hosts reached from two addresses: --listen must say which. */
  if (orion_launcher_facing("::1", route, sizeof route) == 0) {
    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "127.0.0.1\n[::1]\n", 16), 16);
    close(fd);
    cr_assert_eq(orion_launcher_load_hosts(&l, &e), 0, "%s", e.msg);
    o.listen = NULL;
    cr_assert_eq(orion_launcher_bind(&l, &o, &e), ORION_EINVAL);
    cr_assert(strstr(e.msg, "reaches 127.0.0.1 from 127.0.0.1 and ::1 from "
                            "::1: give --listen ADDR") != NULL,
              "%s", e.msg);
    cr_assert_null(o.listen);
  }
  o.listen = "10.0.0.1:7000";
  cr_assert_eq(orion_launcher_bind(&l, &o, &e), 0);
  cr_assert_str_eq(o.listen, "10.0.0.1:7000");
  orion_launcher_free(&l);
  unlink(path);
}

Test(launch, launcher_hosts_and_rank_zero) {
  char path[] = "/tmp/orion-hosts-XXXXXX";
  int fd = mkstemp(path);
  orion_launcher l;
  orion_cluster_opts o;
  orion_error e;
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, "a 2\nb\n", 6), 6);
  close(fd);
  orion_launcher_init(&l);
  l.kind = ORION_LAUNCH_SSH;
  l.hosts_file = path;
  cr_assert_eq(orion_launcher_load_hosts(&l, &e), 0, "%s", e.msg);
  cr_assert_eq(l.hosts.n, 3);
  cr_assert_str_eq(l.hosts.slots[2].host, "b");
  orion_launcher_free(&l);
  unlink(path);
  cr_assert_neq(orion_launcher_load_hosts(&l, &e), 0);
  cr_assert(strstr(e.msg, "cannot open") != NULL, "%s", e.msg);
  /* Rank 0 of three under srun stays the driver of two executors. */
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "3", 1);
  setenv("ORION_DRIVER", "node1:7077", 1);
  setenv("ORION_TOKEN", "cafe" SECRET, 1);
  orion_launcher_init(&l);
  l.kind = ORION_LAUNCH_SLURM;
  orion_cluster_opts_init(&o);
  cr_assert_eq(orion_launcher_rank_setup(&l, &o, &e), 0, "%s", e.msg);
  cr_assert_eq(o.nexec, 2);
  cr_assert_str_eq(o.listen, "node1:7077"); /* what the ranks reach */
  cr_assert_str_eq(o.token, "cafe" SECRET);
  o.listen = "0.0.0.0"; /* --listen: every address, $ORION_DRIVER's port */
  cr_assert_eq(orion_launcher_rank_setup(&l, &o, &e), 0, "%s", e.msg);
  cr_assert_str_eq(o.listen, "0.0.0.0:7077");
  o.listen = "fe80::1";
  cr_assert_eq(orion_launcher_rank_setup(&l, &o, &e), 0, "%s", e.msg);
  cr_assert_str_eq(o.listen, "[fe80::1]:7077");
  unsetenv("SLURM_NTASKS");
  cr_assert_neq(orion_launcher_rank_setup(&l, &o, &e), 0);
  cr_assert(strstr(e.msg, "SLURM_NTASKS") != NULL, "%s", e.msg);
}

/* A launcher that starts nothing: it records what the cluster told it,
 * names where executors "run", and fails when asked to. */
typedef struct fake_launch {
  int calls, fail;
  orion_cluster_launch_info info;
  char driver[ORION_HOSTPORT_MAX + 1], token[ORION_TOKEN_MAX + 1];
} fake_launch;

static int fake_start(orion_cluster *c, void *ud,
                      const orion_cluster_launch_info *info,
                      orion_error *err) {
  fake_launch *f = ud;
  int i;
  f->calls++;
  f->info = *info;
  snprintf(f->driver, sizeof f->driver, "%s", info->driver);
  snprintf(f->token, sizeof f->token, "%s", info->token);
  if (f->fail)
    return orion_error_set(err, ORION_EINVAL, "fake launcher says no");
  for (i = 0; i < info->n; i++)
    orion_cluster_set_where(c, i, i == 0 ? "fake-host" : "elsewhere");
  return 0;
}

static orion_cluster_opts fake_opts(fake_launch *f, int n) {
  orion_cluster_opts o;
  orion_cluster_opts_init(&o);
  o.nexec = n;
  o.launch = fake_start;
  o.launch_ud = f;
  o.register_timeout = 0.2;
  return o;
}

Test(launch, cluster_calls_its_launcher_with_address_and_token) {
  fake_launch f;
  orion_cluster_opts o;
  orion_error e;
  char host[ORION_HOST_MAX + 1];
  int port = 0;
  memset(&f, 0, sizeof f);
  o = fake_opts(&f, 2);
  orion_error_clear(&e);
  cr_assert_null(orion_cluster_start(&o, &e));
  cr_assert_eq(f.calls, 1);
  cr_assert_eq(f.info.n, 2);
  cr_assert_float_eq(f.info.register_timeout, 0.2, 1e-9);
  cr_assert_eq(orion_hostport_parse(f.driver, host, sizeof host, &port), 0,
               "%s", f.driver);
  cr_assert_str_eq(host, "127.0.0.1");
  cr_assert(port > 0);
  cr_assert_eq(strlen(f.token), ORION_TOKEN_HEX_LEN, "%s", f.token);
  /* Nobody registered: the message names where the launcher said each
   * executor was started. */
  cr_assert(strstr(e.msg, "2 of 2 executors never registered") != NULL,
            "%s", e.msg);
  cr_assert(strstr(e.msg, "executor 0 (fake-host), executor 1 (elsewhere)") !=
                NULL,
            "%s", e.msg);
  /* A given token is the one executors must present. */
  memset(&f, 0, sizeof f);
  o = fake_opts(&f, 1);
  o.token = "0123456789abcdef";
  cr_assert_null(orion_cluster_start(&o, &e));
  cr_assert_str_eq(f.token, "0123456789abcdef");
}

Test(launch, cluster_reports_its_launcher_failing_or_missing) {
  fake_launch f;
  orion_cluster_opts o;
  orion_error e;
  memset(&f, 0, sizeof f);
  f.fail = 1;
  o = fake_opts(&f, 1);
  orion_error_clear(&e);
  cr_assert_null(orion_cluster_start(&o, &e));
  cr_assert_eq(f.calls, 1);
  cr_assert_str_eq(e.msg, "fake launcher says no");
  o.launch = NULL;
  cr_assert_null(orion_cluster_start(&o, &e));
  cr_assert_eq(e.code, ORION_EINVAL);
  cr_assert(strstr(e.msg, "no launcher") != NULL, "%s", e.msg);
  o = fake_opts(&f, 1);
  o.listen = "node1:notaport";
  cr_assert_null(orion_cluster_start(&o, &e));
  cr_assert(strstr(e.msg, "--listen: expected HOST or HOST:PORT") != NULL,
            "%s", e.msg);
}

/* ------------------------------------------------------------------------
 * orion-driver's command line.
 * ---------------------------------------------------------------------- */

/* orion-driver with args (NULL-terminated) and no executors; the status
 * is checked against want and stderr must hold msg (stdout empty unless
 * the run succeeded). */
static void drive_expect(const char *const *args, int want, const char *msg) {
  char *script = tu_write_temp(".lua", "print('ran', ...)\n");
  const char *argv[16];
  tu_run r;
  int n = 0, i;
  argv[n++] = "--executors";
  argv[n++] = "0";
  for (i = 0; args[i] != NULL; i++)
    argv[n++] = strcmp(args[i], "S") == 0 ? script : args[i];
  argv[n] = NULL;
  r = tu_drive(".", argv, 30);
  cr_expect_eq(r.status, want, "%s: status %d: %s", args[0], r.status, r.err);
  cr_expect(strstr(r.err, msg) != NULL, "%s: wanted '%s' in: %s", args[0],
            msg, r.err);
  if (want != 0)
    cr_expect_str_empty(r.out, "%s", r.out);
  tu_run_free(&r);
  unlink(script);
  free(script);
}

#define EXPECT_RUN(want, msg, ...)                                          \
  do {                                                                      \
    const char *a_[] = {__VA_ARGS__, NULL};                                 \
    drive_expect(a_, want, msg);                                            \
  } while (0)

Test(launch, driver_options_are_spelled_out_and_end_at_the_script) {
  EXPECT_RUN(2, "orion-driver: unknown option '--quie'", "--quie", "S");
  EXPECT_RUN(2, "unknown option '--exec'", "--exec", "2", "S");
  EXPECT_RUN(2, "unknown option '-hx'", "-hx");
  EXPECT_RUN(2, "unknown option '-xh'", "-xh");
  EXPECT_RUN(2, "unknown option '--help=1'", "--help=1");
  EXPECT_RUN(2, "unknown option '---quiet'", "---quiet", "S");
  EXPECT_RUN(2, "Try 'orion-driver --help'.", "--bogus", "S");
  EXPECT_RUN(2, "no script given", "--quiet");
  /* After the script, and after "--", words are the script's. */
  EXPECT_RUN(0, "", "--quiet", "S", "--bogus", "-h");
  EXPECT_RUN(0, "", "--", "S", "--quiet");
}

Test(launch, driver_option_values_and_their_messages) {
  EXPECT_RUN(2, "--executors needs a number 0..4096\n", "--executors");
  EXPECT_RUN(2, "--executors needs a number 0..4096, not 'x'", "--executors",
             "x", "S");
  EXPECT_RUN(2, "--executors needs a number 0..4096, not '--quiet'",
             "--executors", "--quiet", "S");
  EXPECT_RUN(2, "--hosts needs a file name", "--hosts");
  EXPECT_RUN(2, "--launcher must be local, ssh, slurm, mpi or manual, not ''",
             "--launcher");
  EXPECT_RUN(2, "not 'bogus'", "--launcher", "bogus", "S");
  EXPECT_RUN(2, "--launcher ssh needs --hosts FILE", "--launcher", "ssh",
             "S");
  EXPECT_RUN(2, "--listen needs HOST[:PORT]", "--listen");
  EXPECT_RUN(2, "--register-timeout needs a number of seconds (0..86400]",
             "--register-timeout", "0", "S");
  EXPECT_RUN(2, "--heartbeat-timeout needs a number of seconds (0..86400]",
             "--heartbeat-timeout", "5x", "S");
  EXPECT_RUN(2, "--metrics needs a file name", "--metrics");
  EXPECT_RUN(2, "--seed needs a number", "--seed");
  EXPECT_RUN(2, "--seed needs a non-negative integer, not ''", "--seed", "",
             "S");
  EXPECT_RUN(2, "--hosts: cannot open /nonexistent-orion-hosts",
             "--hosts", "/nonexistent-orion-hosts", "S");
  /* "--name=value" is "--name value". */
  EXPECT_RUN(0, "", "--seed=7", "--register-timeout=2", "S");
  EXPECT_RUN(2, "--seed needs a non-negative integer, not '-1'", "--seed=-1",
             "S");
}

/* The managed buffers' budget (issue 17): a number of megabits per second
 * above 0, on the command line or in $ORION_BANDWIDTH_MBPS. */
Test(launch, bandwidth_budget_must_be_a_positive_number) {
  const char *msg = "--bandwidth-mbps needs a number of megabits per second "
                    "above 0, not '";
  char want[160];
  const char *bad[] = {"0", "-5", "abc", "", "nan", "12x"};
  size_t k;
  for (k = 0; k < sizeof bad / sizeof *bad; k++) {
    snprintf(want, sizeof want, "%s%s'", msg, bad[k]);
    EXPECT_RUN(2, want, "--bandwidth-mbps", bad[k], "S");
  }
  EXPECT_RUN(2, "--bandwidth-mbps needs a number of megabits per second "
                "above 0, not ''",
             "--bandwidth-mbps");
  EXPECT_RUN(0, "", "--bandwidth-mbps", "100", "S");
  EXPECT_RUN(0, "", "--bandwidth-mbps=0.5", "S");
  setenv("ORION_BANDWIDTH_MBPS", "fast", 1);
  EXPECT_RUN(2, "orion-driver: ORION_BANDWIDTH_MBPS must be a number of "
                "megabits per second above 0, not 'fast'",
             "S");
  setenv("ORION_BANDWIDTH_MBPS", "-1", 1);
  EXPECT_RUN(2, "ORION_BANDWIDTH_MBPS must be a number of megabits per "
                "second above 0, not '-1'",
             "S");
  setenv("ORION_BANDWIDTH_MBPS", "250", 1);
  EXPECT_RUN(0, "", "S");
  unsetenv("ORION_BANDWIDTH_MBPS");
}

/* ------------------------------------------------------------------------
 * --hosts through a stand-in for ssh: executors that start in another
 * folder than the driver (ssh starts them in the remote home), and the
 * failures of a first contact with a host.
 * ---------------------------------------------------------------------- */

/* The stand-in: skips ssh's options, then per $FAKE_SSH_MODE prints what
 * ssh prints for an unknown host key or a refused login and exits 255,
 * or runs the remote command with sh in $FAKE_SSH_HOME (the "remote
 * home"), first dropping the "cd DIR 2>/dev/null; " the launcher puts in
 * front with FAKE_SSH_NOCD=1 (a host where the driver's folder does not
 * exist). */
static const char fake_ssh_text[] =
    "#!/bin/sh\n"
    "while [ $# -gt 0 ]; do\n"
    "  case $1 in -o) shift 2 ;; -*) shift ;; *) break ;; esac\n"
    "done\n"
    "host=$1; shift\n"
    "case ${FAKE_SSH_MODE:-run} in\n"
    "  hostkey) echo 'Host key verification failed.' >&2; exit 255 ;;\n"
    "  changed) cat \"$FAKE_SSH_HOME/changed.txt\" >&2; exit 255 ;;\n"
    "  denied) echo \"$USER@$host: Permission denied "
    "(publickey,password).\" >&2; exit 255 ;;\n"
    "esac\n"
    "cmd=$*\n"
    "[ \"${FAKE_SSH_NOCD:-}\" = 1 ] && cmd=${cmd#cd * 2>/dev/null; }\n"
    "cd \"$FAKE_SSH_HOME\" || exit 1\n"
    "exec /bin/sh -c \"$cmd\"\n";

/* A temporary folder holding the stand-in `ssh`, first on PATH, a hosts
 * file of two executors on "node-b", and the data file data.txt; the
 * test's process (its own, under criterion) moves into that folder. */
typedef struct fake_hosts {
  char dir[64];
  char hosts[96];
} fake_hosts;

static void fake_hosts_setup(fake_hosts *h) {
  char path[128], *old = getenv("PATH"), *newpath;
  FILE *f;
  snprintf(h->dir, sizeof h->dir, "/tmp/orion-fake-ssh-XXXXXX");
  cr_assert_not_null(mkdtemp(h->dir));
  snprintf(path, sizeof path, "%s/ssh", h->dir);
  f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(fake_ssh_text, f);
  fclose(f);
  cr_assert_eq(chmod(path, 0755), 0);
  snprintf(h->hosts, sizeof h->hosts, "%s/hosts", h->dir);
  f = fopen(h->hosts, "w");
  fputs("node-b 2\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/data.txt", h->dir);
  f = fopen(path, "w");
  fputs("1 1 1.5\n2 3 2.5\n3 2 4\n", f);
  fclose(f);
  newpath = malloc(strlen(h->dir) + strlen(old != NULL ? old : "") + 2);
  sprintf(newpath, "%s:%s", h->dir, old != NULL ? old : "");
  setenv("PATH", newpath, 1);
  free(newpath);
  setenv("FAKE_SSH_HOME", "/", 1); /* the "remote home": not our folder */
  cr_assert_eq(chdir(h->dir), 0);
}

static void fake_hosts_free(fake_hosts *h) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->dir);
  cr_assert_eq(system(cmd), 0);
}

/* orion-driver --hosts HOSTS SCRIPT ARG, the script loading ARG. */
static tu_run drive_hosts(const fake_hosts *h, const char *arg) {
  char *script = tu_write_temp(".lua",
                               "local orion = require 'orion'\n"
                               "local A = orion.text_file(arg[1])\n"
                               "print('loaded', A:nnz())\n");
  const char *args[] = {"--quiet", "--register-timeout", "20", "--hosts",
                        h->hosts,  script, arg, NULL};
  tu_run r = tu_drive(".", args, 60);
  unlink(script);
  free(script);
  return r;
}

Test(launch, hosts_relative_data_path_is_the_drivers) {
  fake_hosts h;
  tu_run r;
  fake_hosts_setup(&h);
  /* The driver's folder does not exist on the "host": executors run in
   * its home, and still read the file the driver means. */
  setenv("FAKE_SSH_NOCD", "1", 1);
  r = drive_hosts(&h, "data.txt");
  cr_expect_eq(r.status, 0, "status %d\n%s", r.status, r.err);
  cr_expect_str_eq(r.out, "loaded\t3\n", "%s", r.err);
  tu_run_free(&r);
  fake_hosts_free(&h);
}

Test(launch, hosts_missing_file_names_the_executor_and_its_host) {
  fake_hosts h;
  tu_run r;
  char want[256];
  fake_hosts_setup(&h);
  r = drive_hosts(&h, "missing.txt");
  snprintf(want, sizeof want,
           "executor 0 on node-b: cannot open %s/missing.txt: No such file "
           "or directory",
           h.dir);
  cr_expect_eq(r.status, 1, "status %d\n%s", r.status, r.err);
  cr_expect(strstr(r.err, want) != NULL, "wanted '%s' in:\n%s", want, r.err);
  tu_run_free(&r);
  fake_hosts_free(&h);
}

/* With the stand-in ssh failing as FAKE_SSH_MODE says, the job ends with
 * code 3, ssh's own words (said) still reach the user, and then the
 * driver's line saying what to do (hint). */
static void expect_ssh_hint(const char *mode, const char *said,
                            const char *hint) {
  fake_hosts h;
  tu_run r;
  fake_hosts_setup(&h);
  setenv("FAKE_SSH_MODE", mode, 1);
  r = drive_hosts(&h, "data.txt");
  cr_expect_eq(r.status, 3, "status %d\n%s", r.status, r.err);
  cr_expect(strstr(r.err, said) != NULL, "wanted '%s' in:\n%s", said, r.err);
  cr_expect(strstr(r.err, hint) != NULL, "wanted '%s' in:\n%s", hint, r.err);
  cr_expect(strstr(r.err, "exited with code 255") != NULL, "%s", r.err);
  tu_run_free(&r);
  fake_hosts_free(&h);
}

Test(launch, hosts_unknown_host_key_says_what_to_do) {
  expect_ssh_hint("hostkey", "Host key verification failed.\n",
                  "orion-driver: host node-b: ssh does not know this host's "
                  "key (Host key verification failed). Run 'ssh node-b "
                  "true' once to check and accept its key, or add it with "
                  "'ssh-keyscan node-b >> ~/.ssh/known_hosts'\n");
}

/* What OpenSSH 9 prints (sshconnect.c, warn_changed_key and
 * check_host_key) when a host answers with another key than the one in
 * known_hosts and StrictHostKeyChecking (BatchMode) refuses it. */
static const char ssh_changed_text[] =
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
    "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
    "IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!\n"
    "Someone could be eavesdropping on you right now (man-in-the-middle "
    "attack)!\n"
    "It is also possible that a host key has just been changed.\n"
    "The fingerprint for the ECDSA key sent by the remote host is\n"
    "SHA256:q3RmBJ0hP1Cxw9ZVVt4ZkHh0e8vV3o0nWkq9ZyDFa0Q.\n"
    "Please contact your system administrator.\n"
    "Add correct host key in /home/me/.ssh/known_hosts to get rid of this "
    "message.\n"
    "Offending ECDSA key in /home/me/.ssh/known_hosts:3\n"
    "  remove with:\n"
    "  ssh-keygen -f \"/home/me/.ssh/known_hosts\" -R \"node-b\"\n"
    "Host key for node-b has changed and you have requested strict "
    "checking.\n"
    "Host key verification failed.\n";

/* issue 32: a changed host key was answered with the unknown-key advice
 * (accept whatever answers now, or ssh-keyscan it), which trusts exactly
 * the key the warning is about.  Now the driver says the key changed,
 * that this may be an attack, and how to check the new key first. */
Test(launch, hosts_changed_host_key_says_it_may_be_an_attack) {
  fake_hosts h;
  tu_run r;
  char path[128];
  FILE *f;
  fake_hosts_setup(&h);
  snprintf(path, sizeof path, "%s/changed.txt", h.dir);
  f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(ssh_changed_text, f);
  fclose(f);
  setenv("FAKE_SSH_HOME", h.dir, 1);
  setenv("FAKE_SSH_MODE", "changed", 1);
  r = drive_hosts(&h, "data.txt");
  cr_expect_eq(r.status, 3, "status %d\n%s", r.status, r.err);
  cr_expect(strstr(r.err, "REMOTE HOST IDENTIFICATION HAS CHANGED!") != NULL,
            "ssh's own words reach the user:\n%s", r.err);
  cr_expect(strstr(r.err,
                   "orion-driver: host node-b: its ssh host key has CHANGED "
                   "since it was recorded in known_hosts (REMOTE HOST "
                   "IDENTIFICATION HAS CHANGED). This may be an attack: "
                   "someone between here and node-b answering in its place. "
                   "Do not remove the old key yet: check the new one out of "
                   "band first, by running 'ssh-keygen -lf "
                   "/etc/ssh/ssh_host_ecdsa_key.pub' on node-b's console or "
                   "asking its administrator, and compare what it prints "
                   "with SHA256:q3RmBJ0hP1Cxw9ZVVt4ZkHh0e8vV3o0nWkq9ZyDFa0Q, "
                   "the key that answered now. Only if they match (the host "
                   "was reinstalled or its key replaced), run 'ssh-keygen -R "
                   "node-b' and then 'ssh node-b true' to accept the new "
                   "key\n") != NULL,
            "%s", r.err);
  /* Never the advice that would trust the new key unchecked. */
  cr_expect(strstr(r.err, "ssh-keyscan") == NULL, "%s", r.err);
  cr_expect(strstr(r.err, "does not know this host's key") == NULL, "%s",
            r.err);
  tu_run_free(&r);
  unsetenv("FAKE_SSH_MODE");
  fake_hosts_free(&h);
}

Test(launch, hosts_password_login_says_what_to_do) {
  expect_ssh_hint("denied", "@node-b: Permission denied (publickey,password).",
                  "orion-driver: host node-b: ssh could not log in without a "
                  "password (Permission denied). Executors are started with "
                  "'ssh -o BatchMode=yes', which needs key-based login: make "
                  "a key with 'ssh-keygen', copy it with 'ssh-copy-id "
                  "node-b', and check that 'ssh -o BatchMode=yes node-b "
                  "true' works\n");
}

Test(launch, ssh_argv_enters_the_drivers_folder) {
  orion_launch_cmd c;
  char **argv = NULL;
  memset(&c, 0, sizeof c);
  c.exe = "/opt/orion/bin/orion-executor";
  c.driver = "10.0.0.1:7000";
  c.id = 1;
  c.cwd = "/home/me/my project's data";
  cr_assert_eq(orion_launch_ssh_argv(&c, "node1", &argv), 0);
  cr_assert_str_eq(argv[6],
                   "cd '/home/me/my project'\\''s data' 2>/dev/null; "
                   "'/opt/orion/bin/orion-executor' '--driver' "
                   "'10.0.0.1:7000' '--id' '1'");
  orion_launch_argv_free(argv);
}

/* The rule for a script path that does not open from the current folder:
 * the apps beside the binary (this build tree) or installed relative to
 * it or at the configured prefix (drivers/datadir.h). */
Test(launch, script_path_falls_back_to_the_apps) {
  const char *argv_help[] = {"--executors", "0", "apps/mf/mf.lua", "--help",
                             NULL};
  const char *argv_short[] = {"--executors", "0", "mf/mf.lua", "--help",
                              NULL};
  const char *argv_none[] = {"--executors", "0", "apps/none/x.lua", NULL};
  char apps[1024];
  const char *drv, *slash;
  tu_run r;
  /* A build outside the source tree (distcheck's) has no apps/ beside
   * the binary, and nothing is installed yet. */
  drv = tu_driver();
  slash = strrchr(drv, '/');
  snprintf(apps, sizeof apps, "%.*sapps/mf/mf.lua",
           slash != NULL ? (int)(slash - drv + 1) : 0, drv);
  if (access(apps, R_OK) != 0)
    cr_skip_test("%s: no apps/ beside the driver (a VPATH build)", apps);
  cr_assert_eq(chdir("/"), 0);
  r = tu_drive(".", argv_help, 30);
  cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.err);
  cr_expect(strncmp(r.out, "usage: orion-driver mf.lua", 26) == 0, "%s",
            r.out);
  tu_run_free(&r);
  r = tu_drive(".", argv_short, 30);
  cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.err);
  tu_run_free(&r);
  /* Not found anywhere: the message names the path as given. */
  r = tu_drive(".", argv_none, 30);
  cr_expect_eq(r.status, 2);
  cr_expect_str_eq(r.err, "orion-driver: cannot open script apps/none/x.lua: "
                          "No such file or directory\n");
  tu_run_free(&r);
}

/* issue 18: a secret shorter than 128 bits is refused by the executor,
 * whether it comes as $ORION_TOKEN or --token (the driver refuses a short
 * $ORION_TOKEN of srun/mpirun ranks: rank_driver_and_token). */
Test(launch, executor_refuses_a_short_secret) {
  const char *exe = getenv("ORION_EXECUTOR");
  char *argv[] = {(char *)exe, "--driver", "127.0.0.1:9", NULL, NULL, NULL};
  tu_run r;
  cr_assert_not_null(exe, "ORION_EXECUTOR is not set (make check sets it)");
  setenv("ORION_TOKEN", "0123456789abcdef0123456789abcde", 1); /* 31 */
  r = tu_run_argv(argv, 20);
  cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_expect(strstr(r.err, "the token (--token or $ORION_TOKEN) is 31 "
                          "characters; a job's secret needs at least 128 "
                          "bits: 32 or more characters") != NULL,
            "%s", r.err);
  tu_run_free(&r);
  unsetenv("ORION_TOKEN");
  argv[3] = "--token";
  argv[4] = "x";
  r = tu_run_argv(argv, 20);
  cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_expect(strstr(r.err, "is 1 characters; a job's secret needs at least "
                          "128 bits") != NULL,
            "%s", r.err);
  tu_run_free(&r);
}
