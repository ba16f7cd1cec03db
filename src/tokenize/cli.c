/* cli.c: `inferrail-gateway tokenize --tokenizer SPEC [--jsonl] < INPUT`.
 *
 * INPUT is an OpenAI request body (with --jsonl, one per line). A
 * completions body's string prompt is encoded with special tokens added
 * (unless the body sets add_special_tokens to false), as vLLM does; a chat body is rendered with
 * the model's chat template as vLLM prepares a chat (irt_chat) and encoded without adding special
 * tokens (unless the body sets add_special_tokens). Each body gives one line:
 * {"prompt_tokens": N, "token_ids": [...]} or {"error": "..."}. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

static void print_error(const char *msg) {
    json_t *o = json_pack("{s:s}", "error", msg);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s)
        printf("%s\n", s);
    else
        printf("{\"error\":\"internal error\"}\n");
    free(s);
    json_decref(o);
}

/* Returns 0 when the body was tokenized, -1 when it got an error line. */
static void print_ids(const irt_ids *ids) {
    printf("{\"prompt_tokens\": %zu, \"token_ids\": [", ids->len);
    for (size_t i = 0; i < ids->len; i++) printf(i ? ", %u" : "%u", ids->ids[i]);
    printf("]}\n");
}

/* A chat body through the chat template; 0 when tokenized. */
static int handle_chat(const irt_tokenizer *t, const irt_chat *chat, const json_t *root,
                       irt_ids *ids) {
    char err[512], msg[640];
    ir_buf text;
    ir_buf_init(&text, (size_t)1 << 30);
    int e;
    if (irt_chat_uses_harmony(chat)) { /* gpt-oss: openai-harmony, not a template */
        ids->len = 0;
        e = irt_harmony_ids(t, NULL, root, NULL, ids, NULL, err, sizeof err);
        ir_buf_free(&text);
        if (e == IRT_OK)
            print_ids(ids);
        else
            print_error(err);
        return e == IRT_OK ? 0 : -1;
    }
    bool add;
    e = irt_add_special_tokens(root, true, &add);
    if (e) snprintf(err, sizeof err, "add_special_tokens: Input should be a valid boolean");
    if (e == IRT_OK) e = irt_chat_render(chat, root, &text, err, sizeof err);
    if (e == IRT_OK) {
        e = irt_encode(t, text.data ? text.data : "", text.len, add, ids);
        if (e) snprintf(err, sizeof err, "cannot tokenize the rendered chat: %s", irt_strerror(e));
    }
    ir_buf_free(&text);
    if (e == IRT_OK) {
        print_ids(ids);
        return 0;
    }
    snprintf(msg, sizeof msg, "%s%s", e == IRT_ETEMPLATE ? "the chat template refused it: " : "",
             err);
    print_error(msg);
    return -1;
}

static int handle_body(const irt_tokenizer *t, const irt_chat *chat, const char *body, size_t len,
                       irt_ids *ids) {
    json_error_t je;
    ir_skip_utf8_bom(&body, &len);
    json_t *root = irt_json_loads(body, len, JSON_ALLOW_NUL, &je); /* json.loads rules */
    char msg[512];
    if (!root) {
        snprintf(msg, sizeof(msg), "invalid JSON: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        print_error(msg);
        return -1;
    }
    int rc = -1;
    bool add;
    json_t *prompt = json_object_get(root, "prompt");
    if (!t && json_is_object(root)) {
        /* builtin:sim: its chat template is known, so chat bodies work too. */
        ir_buf text;
        ir_buf_init(&text, 0);
        const char *why = NULL;
        json_t *msgs = json_object_get(root, "messages");
        int e = -1;
        ids->len = 0;
        if (msgs) {
            if (irt_sim_render_chat(msgs, true, &text, &why) == 0)
                e = irt_sim_encode(text.data ? text.data : "", text.len, ids);
        } else if (json_is_string(prompt)) {
            e = irt_sim_encode(json_string_value(prompt), json_string_length(prompt), ids);
        } else {
            why = prompt ? "\"prompt\" must be a string"
                         : "the body has no \"prompt\" or \"messages\"";
        }
        ir_buf_free(&text);
        if (e == 0) {
            printf("{\"prompt_tokens\": %zu, \"token_ids\": [", ids->len);
            for (size_t i = 0; i < ids->len; i++) printf(i ? ", %u" : "%u", ids->ids[i]);
            printf("]}\n");
            rc = 0;
        } else {
            print_error(why ? why : "cannot tokenize the body");
        }
    } else if (!json_is_object(root)) {
        print_error("the body must be a JSON object");
    } else if (json_object_get(root, "messages")) {
        rc = handle_chat(t, chat, root, ids);
    } else if (!prompt) {
        print_error("the body has no \"prompt\"");
    } else if (!json_is_string(prompt)) {
        print_error("\"prompt\" must be a string");
    } else if (irt_add_special_tokens(root, false, &add)) {
        print_error("add_special_tokens: Input should be a valid boolean");
    } else {
        int e = irt_encode(t, json_string_value(prompt), json_string_length(prompt), add, ids);
        if (e) {
            snprintf(msg, sizeof(msg), "cannot tokenize the prompt: %s", irt_strerror(e));
            print_error(msg);
        } else {
            print_ids(ids);
            rc = 0;
        }
    }
    json_decref(root);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "usage: inferrail-gateway tokenize --tokenizer SPEC [--jsonl] < INPUT\n"
               "  SPEC: a model directory, a tokenizer.json path, org/name[@revision] in\n"
               "        the local Hugging Face cache ($HF_HOME/hub; nothing is downloaded),\n"
               "        or builtin:sim (the simulator's tokenizer, chat bodies included)\n"
               "  INPUT: an OpenAI completions or chat body; with --jsonl, one body per line.\n"
               "        Chats are rendered with the model's chat template as vLLM prepares\n"
               "        them, and tokenized without adding special tokens; a gpt-oss model\n"
               "        directory's chats (config.json model_type gpt_oss) are rendered as\n"
               "        vLLM renders them with openai-harmony, dated $VLLM_SYSTEM_START_DATE\n"
               "        when set, else today's local date\n");
}

int irt_cli_main(int argc, char **argv) {
    const char *spec = NULL;
    bool jsonl = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
            spec = argv[++i];
        else if (!strncmp(argv[i], "--tokenizer=", 12))
            spec = argv[i] + 12;
        else if (!strcmp(argv[i], "--jsonl"))
            jsonl = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "tokenize: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!spec) {
        usage(stderr);
        return 2;
    }
    char err[1024];
    bool sim = strcmp(spec, IRT_SIM_SPEC) == 0;
    irt_tokenizer *t = sim ? NULL : irt_load(spec, err, sizeof(err));
    if (!t && !sim) {
        fprintf(stderr, "tokenize: %s\n", err);
        return 2;
    }
    irt_chat *chat = sim ? NULL : irt_chat_load(spec, NULL, err, sizeof(err));
    if (!chat && !sim) {
        fprintf(stderr, "tokenize: %s\n", err);
        irt_free(t);
        return 2;
    }
    irt_ids ids = {0};
    int status = 0;
    char *line = NULL;
    size_t cap = 0;
    if (jsonl) {
        ssize_t n;
        while ((n = getline(&line, &cap, stdin)) > 0) {
            size_t len = (size_t)n;
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
            size_t k = 0;
            while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
            if (k == len) continue; /* blank lines carry no body */
            handle_body(t, chat, line, len, &ids);
        }
    } else {
        size_t len = 0;
        cap = 1 << 16;
        line = malloc(cap);
        size_t r;
        while (line && (r = fread(line + len, 1, cap - len, stdin)) > 0) {
            len += r;
            if (len == cap) {
                char *p = cap < ((size_t)1 << 30) ? realloc(line, cap * 2) : NULL;
                if (!p) {
                    print_error("input too large");
                    status = 1;
                    break;
                }
                line = p;
                cap *= 2;
            }
        }
        if (!status && line && handle_body(t, chat, line, len, &ids)) status = 1;
    }
    fflush(stdout);
    free(line);
    irt_ids_free(&ids);
    irt_chat_free(chat);
    irt_free(t);
    return status;
}
