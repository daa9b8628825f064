/* lua/nn.c: the orion.nn dense-math module (OpenBLAS). Being written. */
#include "lua/nn.h"
int orion_nn_placeholder_;
