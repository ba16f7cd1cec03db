/* tmpl_strings.h: Python str operations on UTF-8 for the template engine
 * (internal to src/tokenize). Offsets and lengths are in bytes. */
#ifndef IR_TMPL_STRINGS_H
#define IR_TMPL_STRINGS_H

#include "tokenize/tmpl_internal.h"

typedef enum { TS_UPPER, TS_LOWER, TS_TITLE, TS_CAPITALIZE, TS_TITLE_JINJA } ts_casemode;
typedef enum { TS_DIGIT, TS_ALPHA, TS_ALNUM, TS_SPACE, TS_LOWERCASE, TS_UPPERCASE } ts_class;
typedef void (*ts_piece_fn)(void *ctx, const char *s, size_t n);

/* str.upper/lower/title/capitalize, or Jinja's title filter. */
void ts_case(tsb *b, const char *s, size_t n, ts_casemode mode);
/* str.strip(chars) (chars NULL: white space): the kept range [*from, *to). */
void ts_strip(const char *s, size_t n, const char *chars, size_t cn, bool left, bool right,
              size_t *from, size_t *to);
const char *ts_find(const char *s, size_t n, const char *sub, size_t sn);
const char *ts_rfind(const char *s, size_t n, const char *sub, size_t sn);
size_t ts_count(const char *s, size_t n, const char *sub, size_t sn);
/* str.split / rsplit (sep NULL: runs of white space) and str.splitlines. */
void ts_split(const char *s, size_t n, const char *sep, size_t sn, int64_t maxsplit, bool right,
              ts_piece_fn fn, void *ctx);
void ts_splitlines(const char *s, size_t n, bool keepends, ts_piece_fn fn, void *ctx);
void ts_replace(tsb *b, const char *s, size_t n, const char *old, size_t on, const char *nw,
                size_t nn, int64_t count);
bool ts_is(const char *s, size_t n, ts_class cls);
bool ts_word_char(uint32_t cp); /* \w */

#endif
