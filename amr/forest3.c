/* The 3-D forest: forest.c on p8est. */
#include <p4est_to_p8est.h>

#include "forest.c"
