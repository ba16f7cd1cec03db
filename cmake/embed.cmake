# embed.cmake: writes a C file that holds a file's bytes as an array.
#   cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed.cmake
# It defines `const char NAME[]` (NUL-terminated) and `const size_t NAME_len`.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
file(WRITE ${OUT}.tmp "/* generated from ${IN} by cmake/embed.cmake; do not edit */\n#include <stddef.h>\nconst char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_len = ${bytes};\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
