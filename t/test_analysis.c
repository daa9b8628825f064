/* placeholder replaced below */
#include "t/testutil.h"
Test(analysis, placeholder) { cr_assert(1); }
