/* harmony_internal.h: shared by harmony.c and harmony_ts.c (gpt-oss chats
 * rendered as openai-harmony renders them; see docs/tokenizer.md). */
#ifndef IR_TOKENIZE_HARMONY_INTERNAL_H
#define IR_TOKENIZE_HARMONY_INTERNAL_H

#include "tokenize/ir_tokenize.h"

/* The developer message's "# Tools" section for a "functions" namespace
 * holding tools (a list of Chat Completions tools, each
 * {"type": "function", "function": {"name", "description", "parameters"}}),
 * as openai-harmony's template_tools_section writes it, appended to out.
 * IRT_EUNSUPPORTED for a schema value whose text the gateway cannot write
 * exactly as serde_json would (reals in defaults, numbers past 64 bits,
 * schemas nested over 48 levels),
 * IRT_EINVAL for a tool without a name, IRT_ENOMEM. */
int irt_harmony_tools_section(const json_t *tools, ir_buf *out);

/* A JSON schema as openai-harmony's json_schema_to_typescript writes it,
 * appended to out (indent: the current indentation). Same codes. */
int irt_harmony_schema_ts(const json_t *schema, const char *indent, ir_buf *out);

#endif
