/* Addresses and the job's token: what an executor needs to find and join
 * its driver, in text form.  Host names, "HOST:PORT" (IPv6 in brackets),
 * and the secret token every HELLO carries.  Pure functions (the token
 * reads the system's randomness); no sockets here (dsm/net.c connects and
 * listens).  Used by the cluster (dsm/cluster.c), the launchers
 * (drivers/launch.c) and the executor.
 *
 * Threads: no global state; every function may be called from any thread
 * on distinct arguments.
 */
#ifndef ORION_DSM_ADDR_H
#define ORION_DSM_ADDR_H

#include <stddef.h>

#include "dsm/wire.h"

/* The longest host name (RFC 1035's 253, rounded up; an IPv6 address with
 * a zone id fits too), the longest "[HOST]:PORT" and the longest token
 * (what a HELLO can carry). */
#define ORION_HOST_MAX 255
#define ORION_HOSTPORT_MAX (ORION_HOST_MAX + 9)
#define ORION_TOKEN_MAX ORION_WIRE_TOKEN_MAX

/* The length of a token from orion_token_new, without its NUL. */
#define ORION_TOKEN_HEX_LEN 32

/* Whether s is a host this module accepts: a name (letters, digits, '-',
 * '_', '.', not starting with '-' or '.'), an IPv4 address, or an IPv6
 * address without brackets (optionally with a %zone).  At most
 * ORION_HOST_MAX bytes.  A leading '-' is refused so that a host can never
 * be read as an ssh option. */
int orion_host_valid(const char *s);

/* Why orion_hostport_split refused a HOST[:PORT] text. */
typedef enum orion_hostport_why {
  ORION_HP_OK = 0,
  ORION_HP_BAD_HOST, /* not a name, IPv4 or IPv6 address */
  ORION_HP_LONG,     /* host longer than the buffer or ORION_HOST_MAX */
  ORION_HP_BAD_PORT, /* port not 1..65535 */
  ORION_HP_NO_CLOSE, /* "[" without "]" */
  ORION_HP_AFTER_BR, /* something other than ":PORT" after "]" */
  ORION_HP_BR_NOT_V6 /* brackets around something that is not IPv6 */
} orion_hostport_why;

/* Splits s[0..n) (need not be NUL-terminated) as HOST, HOST:PORT, [IPV6],
 * [IPV6]:PORT or a bare IPv6 address into host (hn bytes, NUL-terminated,
 * without brackets) and *port (0 when absent).  Returns ORION_HP_OK or why
 * not; on ORION_HP_BAD_PORT, *pp and *pn are the port's text.  For
 * messages that say exactly what is wrong (hosts files). */
orion_hostport_why orion_hostport_split(const char *s, size_t n, char *host,
                                        size_t hn, int *port, const char **pp,
                                        size_t *pn);

/* Parses "HOST:PORT" or "[IPV6]:PORT" (port 1..65535, decimal, required)
 * into host (hn bytes, NUL-terminated, without brackets) and *port.
 * Returns 0, or ORION_EINVAL when s is malformed or the host does not fit
 * in hn bytes; host and *port are then unspecified.  Owns nothing. */
int orion_hostport_parse(const char *s, char *host, size_t hn, int *port);

/* Writes host and port as "HOST:PORT", bracketing an IPv6 host
 * ("[::1]:7000"), into out (n bytes).  Returns 0, or ORION_EINVAL when
 * host is not valid, port is not 1..65535 or the text does not fit. */
int orion_hostport_format(const char *host, int port, char *out, size_t n);

/* s[0..n) as a decimal number 0..max of digits only (no sign, no blanks):
 * the number, or ORION_EINVAL when it is not one. */
long orion_addr_decimal(const char *s, size_t n, long max);

/* Writes a fresh token, ORION_TOKEN_HEX_LEN lowercase hex digits from 16
 * bytes of getrandom() (or /dev/urandom where getrandom is missing), and a
 * NUL into out (n >= ORION_TOKEN_HEX_LEN + 1).  Returns 0, ORION_EINVAL
 * when n is too small, or -errno when no randomness can be had (out is
 * then an empty string, never a weak token). */
int orion_token_new(char *out, size_t n);

/* The shortest secret a job accepts from the user ($ORION_TOKEN,
 * --token): 32 characters, the 128 bits of 32 hex digits.  A shorter one
 * can be guessed by anyone who can reach the driver. */
#define ORION_TOKEN_MIN 32

/* Whether tok[0..len), a secret the user chose, is fit to be a job's
 * token: 0, or ORION_EINVAL with why[0..n) saying why and how to make one.
 * The handshake's proofs let anyone who connects test guesses of the
 * token offline (docs/security.md), so a guessable one is refused:
 *  - shorter than ORION_TOKEN_MIN ("is 6 characters; a job's secret needs
 *    at least 128 bits: 32 or more characters, such as the 32 hex digits
 *    of `openssl rand -hex 16`");
 *  - under 96 bits (128 less a margin for what a random token holds by
 *    chance) once runs, sequences and repeats of 4 or more characters are
 *    taken out, each character counted at the bits of the kinds the token
 *    uses (4 for hex digits, or digits alone; else log2 of the classes
 *    present: 26 lowercase, 26 uppercase, 10 digits, 33 other) ("is
 *    mostly runs, sequences and repeats (such as 0123..., aaaa... or a
 *    part written twice): about 20 bits where ...").
 * A check against mistakes, not a measure of randomness: a phrase of
 * words passes it.  The token itself is never put in a message. */
int orion_token_check(const char *tok, size_t len, char *why, size_t n);

#endif
