/* Addresses and the job's token (see addr.h). */
#include "dsm/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<sys/random.h>)
#include <sys/random.h>
#define ORION__HAVE_GETRANDOM 1
#endif
#endif

#include "util/error.h"

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static int is_alnum(char ch) {
  return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* Digits only, at most max; nothing allocated. */
long orion_addr_decimal(const char *s, size_t n, long max) {
  long v = 0;
  size_t i;
  if (n == 0)
    return ORION_EINVAL;
  for (i = 0; i < n; i++) {
    if (!is_digit(s[i]))
      return ORION_EINVAL;
    v = v * 10 + (s[i] - '0');
    if (v > max)
      return ORION_EINVAL;
  }
  return v;
}

/* ------------------------------------------------------------------------
 * Host names and HOST:PORT.
 * ---------------------------------------------------------------------- */

/* Whether s[0..n) is a valid host (see orion_host_valid). */
static int host_valid_n(const char *s, size_t n) {
  size_t i;
  int colon = 0, only_num = 1;
  char buf[ORION_HOST_MAX + 1];
  if (n == 0 || n > ORION_HOST_MAX)
    return 0;
  for (i = 0; i < n; i++)
    if (s[i] == ':')
      colon = 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (colon) {
    /* IPv6, optionally with a %zone of name characters. */
    unsigned char a[16];
    char *pct = memchr(buf, '%', n);
    if (pct != NULL) {
      const char *z = pct + 1;
      if (*z == '\0')
        return 0;
      for (; *z != '\0'; z++)
        if (!is_alnum(*z) && *z != '_' && *z != '-' && *z != '.')
          return 0;
      *pct = '\0';
    }
    return inet_pton(AF_INET6, buf, a) == 1;
  }
  if (s[0] == '-' || s[0] == '.')
    return 0;
  for (i = 0; i < n; i++) {
    char ch = s[i];
    if (!is_alnum(ch) && ch != '-' && ch != '_' && ch != '.')
      return 0;
    if (!is_digit(ch) && ch != '.')
      only_num = 0;
  }
  if (only_num) {
    /* Looks like IPv4: must be one. */
    unsigned char a[4];
    return inet_pton(AF_INET, buf, a) == 1;
  }
  return 1;
}

int orion_host_valid(const char *s) {
  return s != NULL && host_valid_n(s, strnlen(s, ORION_HOST_MAX + 1));
}

/* The parts of a HOST[:PORT] text (see addr.h); host is the caller's. */
orion_hostport_why orion_hostport_split(const char *s, size_t n, char *host,
                                        size_t hn, int *port, const char **pp,
                                        size_t *pn) {
  const char *h, *p = NULL;
  size_t hl, pl = 0, i, colons = 0;
  long v;
  *port = 0;
  if (n > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (close == NULL)
      return ORION_HP_NO_CLOSE;
    h = s + 1;
    hl = (size_t)(close - h);
    if (close + 1 < s + n) {
      if (close[1] != ':')
        return ORION_HP_AFTER_BR;
      p = close + 2;
      pl = (size_t)(s + n - p);
    }
    if (memchr(h, ':', hl) == NULL)
      return ORION_HP_BR_NOT_V6;
  } else {
    const char *last = NULL;
    for (i = 0; i < n; i++)
      if (s[i] == ':') {
        colons++;
        last = s + i;
      }
    h = s;
    hl = n;
    if (colons == 1) {
      hl = (size_t)(last - s);
      p = last + 1;
      pl = (size_t)(s + n - p);
    }
  }
  if (hl >= hn || hl > ORION_HOST_MAX)
    return ORION_HP_LONG;
  if (!host_valid_n(h, hl))
    return ORION_HP_BAD_HOST;
  memcpy(host, h, hl);
  host[hl] = '\0';
  if (p != NULL) {
    *pp = p;
    *pn = pl;
    v = orion_addr_decimal(p, pl, 65535);
    if (v < 1)
      return ORION_HP_BAD_PORT;
    *port = (int)v;
  }
  return ORION_HP_OK;
}

int orion_hostport_parse(const char *s, char *host, size_t hn, int *port) {
  const char *pp;
  size_t pn;
  int p = 0;
  if (s == NULL || host == NULL || hn == 0)
    return ORION_EINVAL;
  if (orion_hostport_split(s, strlen(s), host, hn, &p, &pp, &pn) !=
          ORION_HP_OK ||
      p == 0)
    return ORION_EINVAL;
  if (port != NULL)
    *port = p;
  return 0;
}

int orion_hostport_format(const char *host, int port, char *out, size_t n) {
  int w;
  if (!orion_host_valid(host) || port < 1 || port > 65535 || out == NULL)
    return ORION_EINVAL;
  w = snprintf(out, n, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host,
               port);
  if (w < 0 || (size_t)w >= n)
    return ORION_EINVAL;
  return 0;
}

/* ------------------------------------------------------------------------
 * Tokens.
 * ---------------------------------------------------------------------- */

/* Fills p[0..n) from /dev/urandom. */
static int urandom_fill(unsigned char *p, size_t n) {
  size_t got = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      int e = r < 0 ? errno : EIO;
      close(fd);
      return -e;
    }
    got += (size_t)r;
  }
  close(fd);
  return 0;
}

static int random_fill(unsigned char *p, size_t n) {
#ifdef ORION__HAVE_GETRANDOM
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(p + got, n - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && errno == ENOSYS)
      return urandom_fill(p, n);
    if (r < 0)
      return -errno;
    got += (size_t)r;
  }
  return 0;
#else
  return urandom_fill(p, n);
#endif
}

/* How many kinds of character a token draws from, as a guesser who sees
 * its classes would assume: 16 for hex digits of one case (digits alone
 * count as hex: a random hex token is now and then all digits), else the
 * sum of the classes present: 26 lowercase, 26 uppercase, 10 digits, 33
 * other printable ASCII, and 128 for any other byte. */
static int token_alphabet(const char *t, size_t len) {
  size_t i;
  int lower = 0, upper = 0, digit = 0, other = 0, high = 0, hexl = 1, hexu = 1;
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c >= '0' && c <= '9') {
      digit = 1;
    } else if (c >= 'a' && c <= 'z') {
      lower = 1;
      hexu = 0;
      hexl &= c <= 'f';
    } else if (c >= 'A' && c <= 'Z') {
      upper = 1;
      hexl = 0;
      hexu &= c <= 'F';
    } else {
      hexl = hexu = 0;
      if (c >= 32 && c < 127)
        other = 1;
      else
        high = 1;
    }
  }
  if (hexl || hexu)
    return 16;
  return 10 * digit + 26 * lower + 26 * upper + 33 * other + 128 * high;
}

/* The longest run starting at t[i] whose neighbours differ by one step of
 * -1, 0 or +1 ("0123", "aaaa", "zyxw"); 1 when t[i+1] does not continue
 * t[i] that way. */
static size_t token_sequence(const char *t, size_t len, size_t i) {
  size_t k = i + 1;
  int d;
  if (k >= len)
    return 1;
  d = (unsigned char)t[k] - (unsigned char)t[i];
  if (d < -1 || d > 1)
    return 1;
  while (k + 1 < len &&
         (unsigned char)t[k + 1] - (unsigned char)t[k] == d)
    k++;
  return k + 1 - i;
}

/* The longest stretch starting at t[i] that repeats one starting earlier
 * (they may overlap, so "abababab" repeats from its third character). */
static size_t token_repeat(const char *t, size_t len, size_t i) {
  size_t j, best = 0;
  for (j = 0; j < i; j++) {
    size_t k = 0;
    while (i + k < len && t[j + k] == t[i + k])
      k++;
    if (k > best)
      best = k;
  }
  return best;
}

/* The shortest run, sequence or repeat that the estimate discounts: a
 * random token of 32 hex digits holds one of 4 by chance now and then
 * (about 1 in 45), which the 3/4 margin below absorbs. */
#define TOKEN_PATTERN_MIN 4
/* The characters the search for patterns reads (its time grows with the
 * square of the length). */
#define TOKEN_SCAN_MAX 1024

int orion_token_check(const char *tok, size_t len, char *why, size_t n) {
  double bits_each, left;
  size_t i = 0, free_chars = 0;
  if (len < ORION_TOKEN_MIN) {
    snprintf(why, n,
             "is %zu characters; a job's secret needs at least 128 bits: %d "
             "or more characters, such as the 32 hex digits of `openssl rand "
             "-hex 16`",
             len, ORION_TOKEN_MIN);
    return ORION_EINVAL;
  }
  /* 32 characters of at least 16 kinds: 128 bits at most, before the
   * patterns below. */
  bits_each = log2((double)token_alphabet(tok, len));
  /* What is left once runs, sequences and repeats are taken out: a
   * guesser tries those first.  A sequence counts as its first character
   * and its step, a repeat as one character. */
  if (len > TOKEN_SCAN_MAX) /* longer than any real token: enough */
    len = TOKEN_SCAN_MAX;
  while (i < len) {
    size_t seq = token_sequence(tok, len, i), rep = token_repeat(tok, len, i);
    if (rep >= TOKEN_PATTERN_MIN && rep >= seq) {
      free_chars += 1;
      i += rep;
    } else if (seq >= TOKEN_PATTERN_MIN) {
      free_chars += 2;
      i += seq;
    } else {
      free_chars += 1;
      i += 1;
    }
  }
  left = (double)free_chars * bits_each;
  if (left < 0.75 * 128.0) {
    snprintf(why, n,
             "is mostly runs, sequences and repeats (such as 0123..., "
             "aaaa... or a part written twice): about %.0f bits where a "
             "job's secret needs at least 128; make one with `openssl rand "
             "-hex 16`",
             left);
    return ORION_EINVAL;
  }
  return 0;
}

int orion_token_new(char *out, size_t n) {
  static const char hex[] = "0123456789abcdef";
  unsigned char r[ORION_TOKEN_HEX_LEN / 2];
  size_t i;
  int rc;
  if (out == NULL || n < ORION_TOKEN_HEX_LEN + 1) {
    if (out != NULL && n > 0)
      out[0] = '\0';
    return ORION_EINVAL;
  }
  out[0] = '\0';
  rc = random_fill(r, sizeof r);
  if (rc != 0)
    return rc;
  for (i = 0; i < sizeof r; i++) {
    out[2 * i] = hex[r[i] >> 4];
    out[2 * i + 1] = hex[r[i] & 15];
  }
  out[ORION_TOKEN_HEX_LEN] = '\0';
  memset(r, 0, sizeof r);
  return 0;
}
