/* TensorBoard event files for orion.train (see tfevents.h): the file's
 * name and folder, and the TFRecord framing of one record.  The Event
 * protobufs themselves are encoded in Lua (lua/orion/train.lua). */
#include "lua/tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dsm/wire.h"

/* TFRecord's masked CRC-32C: rotated right by 15 bits, plus a constant,
 * so that a CRC stored inside the data it covers does not cancel out. */
static uint32_t masked_crc(const void *p, size_t n) {
  uint32_t c = orion_wire_crc(0, p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(unsigned char *out, uint64_t v, int n) {
  int i;
  for (i = 0; i < n; i++)
    out[i] = (unsigned char)(v >> (8 * i));
}

/* orion.tfrecord(data) -> the record: the length (8 bytes, little-endian),
 * the masked CRC-32C of those 8 bytes, data, the masked CRC-32C of data. */
static int l_tfrecord(lua_State *L) {
  size_t n;
  const char *data = luaL_checklstring(L, 1, &n);
  unsigned char head[12], tail[4];
  luaL_Buffer b;
  put_le(head, (uint64_t)n, 8);
  put_le(head + 8, masked_crc(head, 8), 4);
  put_le(tail, masked_crc(data, n), 4);
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, (const char *)head, sizeof head);
  luaL_addlstring(&b, data, n);
  luaL_addlstring(&b, (const char *)tail, sizeof tail);
  luaL_pushresult(&b);
  return 1;
}

/* orion.tfevents_file(dir) -> path: makes dir (one level) when absent and
 * creates a new, empty events.out.tfevents.SECONDS.HOST in it (".2", ".3"
 * ... added when a run of the same second holds the name); raises
 * "cannot create PATH: why". */
static int l_tfevents_file(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  char host[256], path[4096];
  long now = (long)time(NULL);
  int k, fd = -1;
  struct stat sb;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return luaL_error(L, "cannot create %s: %s", dir, strerror(errno));
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return luaL_error(L, "cannot write into %s: it is not a folder", dir);
  if (gethostname(host, sizeof host) != 0 || host[0] == '\0')
    snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = '\0';
  for (k = 1; k <= 1000 && fd < 0; k++) {
    int len =
        k == 1 ? snprintf(path, sizeof path, "%s/events.out.tfevents.%ld.%s",
                          dir, now, host)
               : snprintf(path, sizeof path, "%s/events.out.tfevents.%ld.%s.%d",
                          dir, now, host, k);
    if (len < 0 || (size_t)len >= sizeof path)
      return luaL_error(L, "cannot create a file in %s: the path is too long",
                        dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      return luaL_error(L, "cannot create %s: %s", path, strerror(errno));
  }
  if (fd < 0)
    return luaL_error(L, "cannot create %s: every name is taken", path);
  close(fd);
  lua_pushstring(L, path);
  return 1;
}

void orion_tfevents_open(lua_State *L) {
  lua_pushcfunction(L, l_tfrecord);
  lua_setfield(L, -2, "tfrecord");
  lua_pushcfunction(L, l_tfevents_file);
  lua_setfield(L, -2, "tfevents_file");
}
