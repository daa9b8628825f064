#ifndef ORION_DSM_IDX_H
#define ORION_DSM_IDX_H
#endif
