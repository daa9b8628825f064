#ifndef ORION_LUA_NN_H
#define ORION_LUA_NN_H
#endif
