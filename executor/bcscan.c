/* Scanner over Lua 5.4 binary chunks: which globals a function reads and
 * writes.  See bcscan.h for what counts as a global access.
 *
 * The chunk is parsed in two passes.  The first reads the whole function
 * tree into light descriptors (code, constants and line information point
 * into the caller's buffer; nothing is copied) and validates the layout.
 * The second walks the code of every function; it needs the tree because
 * a function's upvalue names come after its nested functions in the chunk,
 * and a nested function's "_ENV" is the global environment only when it
 * refers to its parent's environment upvalue.
 *
 * Layout of a Lua 5.4 chunk (ldump.c), as read here:
 *   header:   "\x1bLua", version 0x54, format 0,
 *             LUAC_DATA "\x19\x93\r\n\x1a\n",
 *             sizeof Instruction/lua_Integer/lua_Number (bytes),
 *             LUAC_INT 0x5678 (lua_Integer), LUAC_NUM 370.5 (lua_Number),
 *             then one byte: the main closure's number of upvalues.
 *   function: source (string), linedefined, lastlinedefined (varints),
 *             numparams, is_vararg, maxstacksize (bytes),
 *             code (varint n, n native Instructions),
 *             constants (varint n, each a tag byte then its payload),
 *             upvalues (varint n, each instack, idx, kind bytes),
 *             protos (varint n, each a function),
 *             lineinfo (varint n, n signed bytes),
 *             abslineinfo (varint n, each pc and line varints),
 *             locvars (varint n, each name string, startpc, endpc varints),
 *             upvalue names (varint n, each a string).
 *   varint:   big-endian groups of 7 bits; the last byte has bit 0x80 set.
 *   string:   varint size; 0 means NULL, otherwise size - 1 bytes follow.
 */
#include "executor/bcscan.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "util/alloc.h"
#include "util/hash.h"

/* ---- format constants ---------------------------------------------------- */

#define BC_SIGNATURE "\x1bLua"
#define BC_VERSION 0x54
#define BC_FORMAT 0
#define BC_DATA "\x19\x93\r\n\x1a\n"
#define BC_SIZE_INSTRUCTION 4
#define BC_SIZE_INTEGER 8
#define BC_SIZE_NUMBER 8
#define BC_INT ((int64_t)0x5678)
#define BC_NUM 370.5

/* Constant tags: basic type | variant << 4. */
enum {
  BC_TNIL = 0x00,
  BC_TFALSE = 0x01,
  BC_TTRUE = 0x11,
  BC_TINT = 0x03,
  BC_TFLT = 0x13,
  BC_TSHRSTR = 0x04,
  BC_TLNGSTR = 0x14
};

/* Line information. */
#define BC_ABSLINEINFO (-0x80)
#define BC_MAXIWTHABS 128

/* Function nesting deeper than this is rejected (Lua's parser stops far
 * earlier); it bounds the recursion of both passes. */
#define BC_MAXDEPTH 256

/* Opcodes of Lua 5.4 (lopcodes.h enum order, 5.4.0 to 5.4.6) that the
 * scanner looks at. */
enum {
  BC_OP_LOADK = 3,
  BC_OP_LOADKX = 4,
  BC_OP_LOADNIL = 8,
  BC_OP_GETUPVAL = 9,
  BC_OP_SETUPVAL = 10,
  BC_OP_GETTABUP = 11,
  BC_OP_GETTABLE = 12,
  BC_OP_SETTABUP = 15,
  BC_OP_SETTABLE = 16,
  BC_OP_SETI = 17,
  BC_OP_SETFIELD = 18,
  BC_OP_SELF = 20,
  BC_OP_MMBIN = 46,
  BC_OP_MMBINI = 47,
  BC_OP_MMBINK = 48,
  BC_OP_CLOSE = 54,
  BC_OP_TBC = 55,
  BC_OP_JMP = 56,
  BC_OP_EQ = 57,
  BC_OP_LT = 58,
  BC_OP_LE = 59,
  BC_OP_EQK = 60,
  BC_OP_EQI = 61,
  BC_OP_LTI = 62,
  BC_OP_LEI = 63,
  BC_OP_GTI = 64,
  BC_OP_GEI = 65,
  BC_OP_TEST = 66,
  BC_OP_CALL = 68,
  BC_OP_TAILCALL = 69,
  BC_OP_RETURN = 70,
  BC_OP_RETURN0 = 71,
  BC_OP_RETURN1 = 72,
  BC_OP_FORLOOP = 73,
  BC_OP_FORPREP = 74,
  BC_OP_TFORPREP = 75,
  BC_OP_TFORCALL = 76,
  BC_OP_TFORLOOP = 77,
  BC_OP_SETLIST = 78,
  BC_OP_VARARG = 80,
  BC_OP_VARARGPREP = 81,
  BC_OP_EXTRAARG = 82,
  BC_NUM_OPCODES = 83
};

/* Instruction fields: op 7 bits; A 8 bits at 7; k at 15; B 8 bits at 16;
 * C 8 bits at 24; Bx 17 bits at 15; Ax 25 bits at 7. */
#define BC_GET_OP(i) ((unsigned)((i)&0x7fu))
#define BC_GET_A(i) ((unsigned)(((i) >> 7) & 0xffu))
#define BC_GET_B(i) ((unsigned)(((i) >> 16) & 0xffu))
#define BC_GET_C(i) ((unsigned)(((i) >> 24) & 0xffu))
#define BC_GET_BX(i) ((unsigned)((i) >> 15))
#define BC_GET_AX(i) ((unsigned)((i) >> 7))

/* ---- the function tree --------------------------------------------------- */

typedef struct bc_str {
  const unsigned char *s; /* into the chunk; NULL for a NULL string */
  size_t len;
} bc_str;

typedef struct bc_const {
  int is_str;
  bc_str str;
} bc_const;

typedef struct bc_abs {
  int pc;
  int line;
} bc_abs;

typedef struct bc_proto {
  int linedefined, lastline;
  size_t start, end; /* the function's bytes after its source name */
  const unsigned char *code; /* ncode native 4-byte instructions */
  int ncode;
  bc_const *k;
  int nk;
  const unsigned char *upv; /* nup triples: instack, idx, kind */
  int nup;
  struct bc_proto *p;
  int np;
  const unsigned char *lineinfo; /* nlineinfo signed bytes */
  int nlineinfo;
  bc_abs *abs;
  int nabs;
  bc_str *upname; /* nup names */
} bc_proto;

static void bc_proto_free(bc_proto *f) {
  int i;
  if (f->p != NULL) {
    for (i = 0; i < f->np; i++)
      bc_proto_free(&f->p[i]);
  }
  orion_free(f->p);
  orion_free(f->k);
  orion_free(f->abs);
  orion_free(f->upname);
  memset(f, 0, sizeof *f);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct bc_reader {
  const unsigned char *buf;
  size_t len;
  size_t pos;
  orion_error *err;
} bc_reader;

static size_t bc_left(const bc_reader *r) { return r->len - r->pos; }

static int bc_trunc(bc_reader *r, const char *what, size_t need) {
  return orion_error_set(r->err, ORION_ETRUNC,
                         "Lua chunk truncated at offset %zu: %s needs %zu "
                         "byte(s), %zu left",
                         r->pos, what, need, bc_left(r));
}

static int bc_bad(bc_reader *r, const char *what) {
  return orion_error_set(r->err, ORION_EBADFILE,
                         "malformed Lua chunk at offset %zu: %s", r->pos, what);
}

static int bc_nomem(orion_error *err) {
  return orion_error_set(err, ORION_ENOMEM,
                         "out of memory while scanning a Lua chunk");
}

static int bc_need(bc_reader *r, size_t n, const char *what) {
  return bc_left(r) < n ? bc_trunc(r, what, n) : 0;
}

static int bc_byte(bc_reader *r, unsigned *out, const char *what) {
  int rc = bc_need(r, 1, what);
  if (rc != 0)
    return rc;
  *out = r->buf[r->pos++];
  return 0;
}

/* Lua 5.4's variable-length unsigned integer, bounded by limit. */
static int bc_varint(bc_reader *r, size_t limit, size_t *out,
                     const char *what) {
  size_t x = 0;
  unsigned b;
  int rc;
  limit >>= 7;
  do {
    if ((rc = bc_byte(r, &b, what)) != 0)
      return rc;
    if (x >= limit)
      return bc_bad(r, "integer overflow in a size or count");
    x = (x << 7) | (b & 0x7fu);
  } while ((b & 0x80u) == 0);
  *out = x;
  return 0;
}

static int bc_int(bc_reader *r, int *out, const char *what) {
  size_t v;
  int rc = bc_varint(r, (size_t)INT_MAX, &v, what);
  if (rc == 0)
    *out = (int)v;
  return rc;
}

/* A count of items each taking at least min_bytes: a count that cannot fit
 * in what is left of the chunk is reported as truncation before anything is
 * allocated for it. */
static int bc_count(bc_reader *r, int *out, size_t min_bytes,
                    const char *what) {
  int rc = bc_int(r, out, what);
  if (rc != 0)
    return rc;
  if ((size_t)*out > bc_left(r) / min_bytes)
    return bc_trunc(r, what, (size_t)*out * min_bytes);
  return 0;
}

static int bc_string(bc_reader *r, bc_str *s, const char *what) {
  size_t size;
  int rc = bc_varint(r, SIZE_MAX, &size, what);
  if (rc != 0)
    return rc;
  if (size == 0) {
    s->s = NULL;
    s->len = 0;
    return 0;
  }
  if ((rc = bc_need(r, size - 1, what)) != 0)
    return rc;
  s->s = r->buf + r->pos;
  s->len = size - 1;
  r->pos += size - 1;
  return 0;
}

/* Compares the next n bytes with lit; a mismatch is `code`. */
static int bc_literal(bc_reader *r, const char *lit, size_t n, int code,
                      const char *what) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (r->pos >= r->len)
      return bc_trunc(r, what, n - i);
    if (r->buf[r->pos] != (unsigned char)lit[i])
      return orion_error_set(r->err, code,
                             "not a Lua 5.4 chunk: %s mismatch at offset %zu",
                             what, r->pos);
    r->pos++;
  }
  return 0;
}

static int bc_header(bc_reader *r, unsigned *nupvalues) {
  unsigned b;
  int rc;
  int64_t iv;
  double nv;
  static const struct {
    unsigned size;
    const char *what;
  } sizes[3] = {{BC_SIZE_INSTRUCTION, "size of Instruction"},
                {BC_SIZE_INTEGER, "size of lua_Integer"},
                {BC_SIZE_NUMBER, "size of lua_Number"}};
  int i;

  if ((rc = bc_literal(r, BC_SIGNATURE, 4, ORION_EBADFILE, "signature")) != 0)
    return rc;
  if ((rc = bc_byte(r, &b, "version")) != 0)
    return rc;
  if (b != BC_VERSION)
    return orion_error_set(r->err, ORION_EVERSION,
                           "Lua chunk version 0x%02x, expected 0x%02x (Lua "
                           "5.4)",
                           b, BC_VERSION);
  if ((rc = bc_byte(r, &b, "format")) != 0)
    return rc;
  if (b != BC_FORMAT)
    return orion_error_set(r->err, ORION_EVERSION,
                           "Lua chunk format %u, expected %d (official)", b,
                           BC_FORMAT);
  if ((rc = bc_literal(r, BC_DATA, 6, ORION_EBADFILE, "LUAC_DATA")) != 0)
    return rc;
  for (i = 0; i < 3; i++) {
    if ((rc = bc_byte(r, &b, sizes[i].what)) != 0)
      return rc;
    if (b != sizes[i].size)
      return orion_error_set(r->err, ORION_EVERSION,
                             "Lua chunk from another build: %s is %u, "
                             "expected %u",
                             sizes[i].what, b, sizes[i].size);
  }
  if ((rc = bc_need(r, sizeof iv, "LUAC_INT")) != 0)
    return rc;
  memcpy(&iv, r->buf + r->pos, sizeof iv);
  if (iv != BC_INT)
    return orion_error_set(r->err, ORION_EVERSION,
                           "Lua chunk from another build: integer format "
                           "mismatch (LUAC_INT)");
  r->pos += sizeof iv;
  if ((rc = bc_need(r, sizeof nv, "LUAC_NUM")) != 0)
    return rc;
  memcpy(&nv, r->buf + r->pos, sizeof nv);
  if (nv != BC_NUM)
    return orion_error_set(r->err, ORION_EVERSION,
                           "Lua chunk from another build: float format "
                           "mismatch (LUAC_NUM)");
  r->pos += sizeof nv;
  return bc_byte(r, nupvalues, "number of upvalues");
}

static int bc_constants(bc_reader *r, bc_proto *f) {
  int i, rc;
  unsigned tag;
  if ((rc = bc_count(r, &f->nk, 1, "constants")) != 0)
    return rc;
  if (f->nk == 0)
    return 0;
  f->k = orion_calloc((size_t)f->nk, sizeof *f->k);
  if (f->k == NULL)
    return bc_nomem(r->err);
  for (i = 0; i < f->nk; i++) {
    if ((rc = bc_byte(r, &tag, "constant tag")) != 0)
      return rc;
    switch (tag) {
    case BC_TNIL:
    case BC_TFALSE:
    case BC_TTRUE:
      break;
    case BC_TINT:
      if ((rc = bc_need(r, BC_SIZE_INTEGER, "integer constant")) != 0)
        return rc;
      r->pos += BC_SIZE_INTEGER;
      break;
    case BC_TFLT:
      if ((rc = bc_need(r, BC_SIZE_NUMBER, "float constant")) != 0)
        return rc;
      r->pos += BC_SIZE_NUMBER;
      break;
    case BC_TSHRSTR:
    case BC_TLNGSTR:
      if ((rc = bc_string(r, &f->k[i].str, "string constant")) != 0)
        return rc;
      f->k[i].is_str = f->k[i].str.s != NULL;
      break;
    default:
      r->pos--;
      return bc_bad(r, "unknown constant tag");
    }
  }
  return 0;
}

static int bc_function(bc_reader *r, bc_proto *f, int depth);

static int bc_protos(bc_reader *r, bc_proto *f, int depth) {
  int i, rc;
  /* a function takes at least 12 bytes */
  if ((rc = bc_count(r, &f->np, 12, "nested functions")) != 0)
    return rc;
  if (f->np == 0)
    return 0;
  f->p = orion_calloc((size_t)f->np, sizeof *f->p);
  if (f->p == NULL)
    return bc_nomem(r->err);
  for (i = 0; i < f->np; i++) {
    if ((rc = bc_function(r, &f->p[i], depth + 1)) != 0)
      return rc;
  }
  return 0;
}

static int bc_debug(bc_reader *r, bc_proto *f) {
  int i, n, rc, ignored;
  bc_str s;

  if ((rc = bc_count(r, &f->nlineinfo, 1, "lineinfo")) != 0)
    return rc;
  f->lineinfo = r->buf + r->pos;
  r->pos += (size_t)f->nlineinfo;

  if ((rc = bc_count(r, &f->nabs, 2, "abslineinfo")) != 0)
    return rc;
  if (f->nabs > 0) {
    f->abs = orion_calloc((size_t)f->nabs, sizeof *f->abs);
    if (f->abs == NULL)
      return bc_nomem(r->err);
  }
  for (i = 0; i < f->nabs; i++) {
    if ((rc = bc_int(r, &f->abs[i].pc, "abslineinfo pc")) != 0 ||
        (rc = bc_int(r, &f->abs[i].line, "abslineinfo line")) != 0)
      return rc;
  }

  if ((rc = bc_count(r, &n, 3, "locvars")) != 0)
    return rc;
  for (i = 0; i < n; i++) {
    if ((rc = bc_string(r, &s, "local name")) != 0 ||
        (rc = bc_int(r, &ignored, "local startpc")) != 0 ||
        (rc = bc_int(r, &ignored, "local endpc")) != 0)
      return rc;
  }

  if ((rc = bc_count(r, &n, 1, "upvalue names")) != 0)
    return rc;
  if (n != 0 && n != f->nup)
    return bc_bad(r, "upvalue name count differs from upvalue count");
  if (n > 0) {
    f->upname = orion_calloc((size_t)n, sizeof *f->upname);
    if (f->upname == NULL)
      return bc_nomem(r->err);
  }
  for (i = 0; i < n; i++) {
    if ((rc = bc_string(r, &f->upname[i], "upvalue name")) != 0)
      return rc;
  }

  /* The scan needs names and lines: reject stripped debug information. */
  if (f->nlineinfo != f->ncode)
    return bc_bad(r, f->nlineinfo == 0
                         ? "no line information (stripped chunk?)"
                         : "line information does not match the code");
  if (n != f->nup)
    return bc_bad(r, "no upvalue names (stripped chunk?)");
  return 0;
}

static int bc_function(bc_reader *r, bc_proto *f, int depth) {
  bc_str source;
  unsigned b;
  int rc;

  if (depth > BC_MAXDEPTH)
    return bc_bad(r, "functions nested too deeply");
  if ((rc = bc_string(r, &source, "source")) != 0)
    return rc;
  f->start = r->pos;
  if ((rc = bc_int(r, &f->linedefined, "linedefined")) != 0 ||
      (rc = bc_int(r, &f->lastline, "lastlinedefined")) != 0 ||
      (rc = bc_byte(r, &b, "numparams")) != 0 ||
      (rc = bc_byte(r, &b, "is_vararg")) != 0 ||
      (rc = bc_byte(r, &b, "maxstacksize")) != 0)
    return rc;

  if ((rc = bc_count(r, &f->ncode, BC_SIZE_INSTRUCTION, "code")) != 0)
    return rc;
  f->code = r->buf + r->pos;
  r->pos += (size_t)f->ncode * BC_SIZE_INSTRUCTION;

  if ((rc = bc_constants(r, f)) != 0)
    return rc;

  if ((rc = bc_count(r, &f->nup, 3, "upvalues")) != 0)
    return rc;
  f->upv = r->buf + r->pos;
  r->pos += (size_t)f->nup * 3;

  if ((rc = bc_protos(r, f, depth)) != 0 || (rc = bc_debug(r, f)) != 0)
    return rc;
  f->end = r->pos;
  return 0;
}

/* ---- results ------------------------------------------------------------- */

typedef struct bc_scanner {
  orion_bc_scan *out;
  orion_error *err;
  size_t *lens;  /* byte length of each item's name */
  int *slots;    /* hash of (name, write): item index + 1, 0 when empty */
  size_t nslots; /* power of two */
} bc_scanner;

static size_t bc_hash(const unsigned char *s, size_t len, int write) {
  uint64_t h = orion_hash_bytes(ORION_HASH_INIT, s, len);
  return (size_t)orion_hash_mix(orion_hash_u64(h, (uint64_t)(write != 0)));
}

static int bc_rehash(bc_scanner *sc, size_t nslots) {
  int *slots = orion_calloc(nslots, sizeof *slots);
  int i;
  if (slots == NULL)
    return bc_nomem(sc->err);
  for (i = 0; i < sc->out->n; i++) {
    const orion_bc_global *g = &sc->out->items[i];
    size_t h = bc_hash((const unsigned char *)g->name, sc->lens[i], g->write);
    while (slots[h & (nslots - 1)] != 0)
      h++;
    slots[h & (nslots - 1)] = i + 1;
  }
  orion_free(sc->slots);
  sc->slots = slots;
  sc->nslots = nslots;
  return 0;
}

static int bc_record(bc_scanner *sc, const bc_str *name, int write, int line) {
  orion_bc_scan *out = sc->out;
  orion_bc_global *g;
  size_t h;
  int idx, rc;

  if ((size_t)out->n + 1 > sc->nslots / 2) {
    if (sc->nslots > SIZE_MAX / 4 / sizeof *sc->slots)
      return bc_nomem(sc->err);
    if ((rc = bc_rehash(sc, sc->nslots == 0 ? 64 : sc->nslots * 2)) != 0)
      return rc;
  }
  h = bc_hash(name->s, name->len, write);
  while ((idx = sc->slots[h & (sc->nslots - 1)]) != 0) {
    g = &out->items[idx - 1];
    if (g->write == write && sc->lens[idx - 1] == name->len &&
        memcmp(g->name, name->s, name->len) == 0) {
      if (line < g->line)
        g->line = line;
      return 0;
    }
    h++;
  }

  if (out->n == out->cap) {
    int cap = out->cap == 0 ? 16 : out->cap * 2;
    orion_bc_global *items;
    size_t *lens;
    if (out->cap > INT_MAX / 2)
      return bc_nomem(sc->err);
    items = orion_realloc(out->items, (size_t)cap * sizeof *items);
    if (items == NULL)
      return bc_nomem(sc->err);
    out->items = items;
    lens = orion_realloc(sc->lens, (size_t)cap * sizeof *lens);
    if (lens == NULL)
      return bc_nomem(sc->err);
    sc->lens = lens;
    out->cap = cap;
  }
  if (name->len == SIZE_MAX)
    return bc_nomem(sc->err);
  g = &out->items[out->n];
  g->name = orion_malloc(name->len + 1);
  if (g->name == NULL)
    return bc_nomem(sc->err);
  memcpy(g->name, name->s, name->len);
  g->name[name->len] = '\0';
  g->line = line;
  g->write = write != 0;
  sc->lens[out->n] = name->len;
  out->n++;
  sc->slots[h & (sc->nslots - 1)] = out->n;
  return 0;
}

/* ---- the code walk ------------------------------------------------------- */

static int bc_bad_insn(bc_scanner *sc, const bc_proto *f, int pc,
                       const char *what) {
  return orion_error_set(sc->err, ORION_EBADFILE,
                         "malformed Lua chunk: %s (function at line %d, "
                         "instruction %d)",
                         what, f->linedefined, pc + 1);
}

static uint32_t bc_insn(const bc_proto *f, int pc) {
  uint32_t i;
  memcpy(&i, f->code + (size_t)pc * BC_SIZE_INSTRUCTION, sizeof i);
  return i;
}

/* The source line of instruction pc, decoded as Lua 5.4 does: start from
 * the closest absolute entry at or before pc (or linedefined), then add the
 * signed byte deltas of the following instructions. */
static int bc_line(const bc_proto *f, int pc) {
  long long line;
  int basepc, i;
  if (f->nabs == 0 || pc < f->abs[0].pc) {
    basepc = -1;
    line = f->linedefined;
  } else {
    i = pc / BC_MAXIWTHABS - 1; /* Lua's estimate, a lower bound */
    if (i < 0)
      i = 0;
    if (i >= f->nabs)
      i = f->nabs - 1;
    if (f->abs[i].pc > pc) /* only in a corrupted table */
      i = 0;
    while (i + 1 < f->nabs && pc >= f->abs[i + 1].pc)
      i++;
    basepc = f->abs[i].pc;
    line = f->abs[i].line;
  }
  while (basepc++ < pc) {
    int d = f->lineinfo[basepc];
    if (d >= 0x80)
      d -= 0x100;
    if (d != BC_ABSLINEINFO) /* never met in a well-formed chunk */
      line += d;
  }
  if (line > INT_MAX)
    return INT_MAX;
  if (line < INT_MIN)
    return INT_MIN;
  return (int)line;
}

/* Whether an instruction may overwrite register reg (or ends the straight
 * line of code), conservatively. */
static int bc_clobbers(uint32_t insn, unsigned reg) {
  unsigned op = BC_GET_OP(insn), a = BC_GET_A(insn);
  switch (op) {
  case BC_OP_SETUPVAL:
  case BC_OP_SETTABUP:
  case BC_OP_SETTABLE:
  case BC_OP_SETI:
  case BC_OP_SETFIELD:
  case BC_OP_MMBIN:
  case BC_OP_MMBINI:
  case BC_OP_MMBINK:
  case BC_OP_CLOSE:
  case BC_OP_TBC:
  case BC_OP_JMP:
  case BC_OP_EQ:
  case BC_OP_LT:
  case BC_OP_LE:
  case BC_OP_EQK:
  case BC_OP_EQI:
  case BC_OP_LTI:
  case BC_OP_LEI:
  case BC_OP_GTI:
  case BC_OP_GEI:
  case BC_OP_TEST:
  case BC_OP_SETLIST:
  case BC_OP_VARARGPREP:
  case BC_OP_EXTRAARG:
    return 0;
  case BC_OP_TAILCALL:
  case BC_OP_RETURN:
  case BC_OP_RETURN0:
  case BC_OP_RETURN1:
    return 1;
  case BC_OP_LOADNIL:
  case BC_OP_CALL:
  case BC_OP_VARARG:
  case BC_OP_FORLOOP:
  case BC_OP_FORPREP:
  case BC_OP_TFORPREP:
  case BC_OP_TFORCALL:
  case BC_OP_TFORLOOP:
    return reg >= a;
  case BC_OP_SELF:
    return reg == a || reg == a + 1;
  default:
    return reg == a;
  }
}

/* At pc: GETUPVAL R <env>.  When it is followed by LOADK/LOADKX R2 <string>
 * and, later on the straight line with R and R2 untouched, by GETTABLE _ R R2
 * (read) or SETTABLE R R2 _ (write), records that access: Lua's encoding of
 * a global whose name has a constant index above 255. */
static int bc_env_indexed(bc_scanner *sc, const bc_proto *f, int pc) {
  uint32_t insn = bc_insn(f, pc), next;
  unsigned treg = BC_GET_A(insn), kreg, kidx;
  int j;

  if (pc + 1 >= f->ncode)
    return 0;
  next = bc_insn(f, pc + 1);
  kreg = BC_GET_A(next);
  if (BC_GET_OP(next) == BC_OP_LOADK) {
    kidx = BC_GET_BX(next);
    j = pc + 2;
  } else if (BC_GET_OP(next) == BC_OP_LOADKX && pc + 2 < f->ncode &&
             BC_GET_OP(bc_insn(f, pc + 2)) == BC_OP_EXTRAARG) {
    kidx = BC_GET_AX(bc_insn(f, pc + 2));
    j = pc + 3;
  } else {
    return 0;
  }
  if (kidx >= (unsigned)f->nk)
    return bc_bad_insn(sc, f, pc + 1, "LOADK constant index out of range");
  if (!f->k[kidx].is_str || kreg == treg)
    return 0;
  for (; j < f->ncode; j++) {
    uint32_t u = bc_insn(f, j);
    unsigned op = BC_GET_OP(u);
    if (op == BC_OP_GETTABLE && BC_GET_B(u) == treg && BC_GET_C(u) == kreg)
      return bc_record(sc, &f->k[kidx].str, 0, bc_line(f, j));
    if (op == BC_OP_SETTABLE && BC_GET_A(u) == treg && BC_GET_B(u) == kreg)
      return bc_record(sc, &f->k[kidx].str, 1, bc_line(f, j));
    if (bc_clobbers(u, treg) || bc_clobbers(u, kreg))
      return 0;
  }
  return 0;
}

static int bc_is_env_name(const bc_str *s) {
  return s->s != NULL && s->len == 4 && memcmp(s->s, "_ENV", 4) == 0;
}

/* Marks in *out (nup bytes, allocated; NULL when f has no upvalues) the
 * upvalues of f that refer to a marked upvalue of its parent (pmark,
 * npmark bytes), or, in the main function (pmark NULL), all of them;
 * env_only keeps only those named _ENV.  An upvalue that captures a
 * register of the parent is a local of the parent, never marked. */
static int bc_mark_upvalues(bc_scanner *sc, const bc_proto *f,
                            const unsigned char *pmark, int npmark,
                            int env_only, unsigned char **out) {
  int i;
  *out = NULL;
  if (f->nup == 0)
    return 0;
  *out = orion_calloc((size_t)f->nup, 1);
  if (*out == NULL)
    return bc_nomem(sc->err);
  for (i = 0; i < f->nup; i++) {
    unsigned instack = f->upv[3 * i], idx = f->upv[3 * i + 1];
    if (env_only && !bc_is_env_name(&f->upname[i]))
      continue;
    (*out)[i] = pmark == NULL ||
                (instack == 0 && idx < (unsigned)npmark && pmark[idx]);
  }
  return 0;
}

/* What a walk does at instruction pc of f, given f's marked upvalues. */
typedef int (*bc_insn_fn)(bc_scanner *sc, const bc_proto *f, int pc,
                          const unsigned char *mark);

/* Walks the code of f and of every function nested in it, calling at on
 * each instruction; mark says which upvalues at looks for (see
 * bc_mark_upvalues; pmark is NULL for the main function). */
static int bc_walk(bc_scanner *sc, const bc_proto *f,
                   const unsigned char *pmark, int npmark, int env_only,
                   bc_insn_fn at) {
  unsigned char *mark;
  int i, pc, rc = bc_mark_upvalues(sc, f, pmark, npmark, env_only, &mark);
  for (pc = 0; pc < f->ncode && rc == 0; pc++)
    rc = BC_GET_OP(bc_insn(f, pc)) >= BC_NUM_OPCODES
             ? bc_bad_insn(sc, f, pc, "unknown opcode")
             : at(sc, f, pc, mark);
  for (i = 0; i < f->np && rc == 0; i++)
    rc = bc_walk(sc, &f->p[i], mark, f->nup, env_only, at);
  orion_free(mark);
  return rc;
}

/* A global access at pc; env[i] says whether upvalue i is the global
 * environment. */
static int bc_global_at(bc_scanner *sc, const bc_proto *f, int pc,
                        const unsigned char *env) {
  uint32_t insn = bc_insn(f, pc);
  unsigned op = BC_GET_OP(insn), a = BC_GET_A(insn), b = BC_GET_B(insn),
           c = BC_GET_C(insn);
  if (op == BC_OP_GETTABUP) {
    if (b >= (unsigned)f->nup || c >= (unsigned)f->nk)
      return bc_bad_insn(sc, f, pc, "GETTABUP operand out of range");
    if (env[b] && f->k[c].is_str)
      return bc_record(sc, &f->k[c].str, 0, bc_line(f, pc));
  } else if (op == BC_OP_SETTABUP) {
    if (a >= (unsigned)f->nup || b >= (unsigned)f->nk)
      return bc_bad_insn(sc, f, pc, "SETTABUP operand out of range");
    if (env[a] && f->k[b].is_str)
      return bc_record(sc, &f->k[b].str, 1, bc_line(f, pc));
  } else if (op == BC_OP_GETUPVAL) {
    if (b >= (unsigned)f->nup)
      return bc_bad_insn(sc, f, pc, "GETUPVAL operand out of range");
    if (env[b])
      return bc_env_indexed(sc, f, pc);
  }
  return 0;
}

/* An assignment (SETUPVAL) at pc to one of the main function's upvalues;
 * outer[i] says whether upvalue i is one.  A nested function's upvalue
 * that captures a register of its parent is a local of the parent, whose
 * assignment stays inside the scanned code. */
static int bc_upvalue_write_at(bc_scanner *sc, const bc_proto *f, int pc,
                               const unsigned char *outer) {
  uint32_t insn = bc_insn(f, pc);
  unsigned b = BC_GET_B(insn);
  if (BC_GET_OP(insn) != BC_OP_SETUPVAL)
    return 0;
  if (b >= (unsigned)f->nup)
    return bc_bad_insn(sc, f, pc, "SETUPVAL operand out of range");
  return outer[b] ? bc_record(sc, &f->upname[b], 1, bc_line(f, pc)) : 0;
}

/* The globals of the main function f: upvalues named _ENV that lead to
 * the main function's environment. */
static int bc_scan_globals(bc_scanner *sc, const bc_proto *f) {
  return bc_walk(sc, f, NULL, 0, 1, bc_global_at);
}

/* The main function's upvalues that f's code assigns. */
static int bc_scan_upvalue_writes(bc_scanner *sc, const bc_proto *f) {
  return bc_walk(sc, f, NULL, 0, 0, bc_upvalue_write_at);
}

/* ---- entry points -------------------------------------------------------- */

typedef int (*bc_scan_fn)(bc_scanner *sc, const bc_proto *f);

/* Reads a whole chunk, header and function tree, into *main_f (zeroed by
 * the caller; freed with bc_proto_free whatever the result). */
static int bc_read_tree(const char *chunk, size_t len, bc_proto *main_f,
                        orion_error *err) {
  bc_reader r;
  unsigned nupvalues;
  int rc;
  r.buf = (const unsigned char *)chunk;
  r.len = chunk == NULL ? 0 : len;
  r.pos = 0;
  r.err = err;
  rc = bc_header(&r, &nupvalues);
  if (rc == 0)
    rc = bc_function(&r, main_f, 0);
  if (rc == 0 && (unsigned)main_f->nup != nupvalues)
    rc = bc_bad(&r, "closure upvalue count differs from its function's");
  if (rc == 0 && r.pos != r.len)
    rc = bc_bad(&r, "trailing bytes after the main function");
  return rc;
}

/* Reads the chunk's function tree, then walks it with scan from the main
 * function; the two entry points differ only in the walk. */
static int bc_scan_chunk(const char *chunk, size_t len, orion_bc_scan *out,
                         orion_error *err, bc_scan_fn scan) {
  bc_scanner sc;
  bc_proto main_f;
  int rc;

  memset(&main_f, 0, sizeof main_f);
  memset(&sc, 0, sizeof sc);
  orion_error_clear(err);
  if (out == NULL || (chunk == NULL && len > 0))
    return orion_error_set(err, ORION_EINVAL, "orion_bcscan: bad arguments");
  out->items = NULL;
  out->n = 0;
  out->cap = 0;
  rc = bc_read_tree(chunk, len, &main_f, err);
  if (rc == 0) {
    sc.out = out;
    sc.err = err;
    rc = scan(&sc, &main_f);
  }
  bc_proto_free(&main_f);
  orion_free(sc.lens);
  orion_free(sc.slots);
  if (rc != 0)
    orion_bc_scan_free(out);
  return rc;
}

int orion_bcscan(const char *chunk, size_t len, orion_bc_scan *out,
                 orion_error *err) {
  return bc_scan_chunk(chunk, len, out, err, bc_scan_globals);
}

int orion_bcscan_upvalue_writes(const char *chunk, size_t len,
                                orion_bc_scan *out, orion_error *err) {
  return bc_scan_chunk(chunk, len, out, err, bc_scan_upvalue_writes);
}

/* ---- the function list (finding a loop body, lua/bodyid.c) --------------- */

static int bc_count_funcs(const bc_proto *f) {
  int i, n = 1;
  for (i = 0; i < f->np; i++)
    n += bc_count_funcs(&f->p[i]);
  return n;
}

/* Appends f and then its nested functions, depth first, at out[*n]. */
static void bc_list_funcs(const bc_proto *f, int parent, int child,
                          orion_bc_func *out, int *n) {
  int i, self = (*n)++;
  out[self].parent = parent;
  out[self].child = child;
  out[self].line = f->linedefined;
  out[self].last = f->lastline;
  out[self].start = f->start;
  out[self].len = f->end - f->start;
  for (i = 0; i < f->np; i++)
    bc_list_funcs(&f->p[i], self, i, out, n);
}

int orion_bcscan_functions(const char *chunk, size_t len,
                           orion_bc_func **out, int *n, orion_error *err) {
  bc_proto main_f;
  int rc;
  orion_error_clear(err);
  *out = NULL;
  *n = 0;
  memset(&main_f, 0, sizeof main_f);
  rc = bc_read_tree(chunk, len, &main_f, err);
  if (rc == 0) {
    *out = orion_calloc((size_t)bc_count_funcs(&main_f), sizeof **out);
    if (*out == NULL)
      rc = bc_nomem(err);
    else
      bc_list_funcs(&main_f, -1, 0, *out, n);
  }
  bc_proto_free(&main_f);
  return rc;
}

void orion_bc_scan_free(orion_bc_scan *s) {
  int i;
  if (s == NULL)
    return;
  for (i = 0; i < s->n; i++)
    orion_free(s->items[i].name);
  orion_free(s->items);
  s->items = NULL;
  s->n = 0;
  s->cap = 0;
}
