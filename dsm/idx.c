/* dsm/idx.c: readers for MNIST IDX files and labelled bag-of-words. Being written. */
#include "dsm/idx.h"
int orion_idx_placeholder_;
