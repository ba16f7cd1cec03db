/* version.c: the version set in CMakeLists.txt and the git commit, from the
 * header that cmake/version.cmake writes at every build. */
#include "core/ir_core.h"

#include "ir_version.h"

const char *ir_version(void) {
    return IR_VERSION_STRING;
}

const char *ir_commit(void) {
    return IR_COMMIT_STRING;
}
