/* shadow.c: one replica's shadow LRU (see index_internal.h). Single-threaded:
 * the caller holds the replica's lock. */
#include "index/index_internal.h"

#include <stdlib.h>

static uint32_t home(const irx_shadow *s, uint64_t lo) {
    return (uint32_t)(((unsigned __int128)lo * s->nslots) >> 64); /* lo is uniform */
}

static uint32_t next_slot(const irx_shadow *s, uint32_t j) {
    return j + 1 == s->nslots ? 0 : j + 1;
}

int irx_shadow_init(irx_shadow *s, uint32_t cap) {
    *s = (irx_shadow){0};
    if (cap == 0 || cap > (1u << 30)) return -1;
    uint32_t nslots = cap + cap / 2 + 1; /* load at most 2/3: writers only probe here */
    /* Neither table is written here: nodes are taken in order (fresh) and slots
     * are zero (empty), so the pages a large cache never reaches stay untouched. */
    s->nodes = malloc((size_t)cap * sizeof *s->nodes);
    s->slots = calloc(nslots, sizeof *s->slots);
    if (!s->nodes || !s->slots) {
        irx_shadow_free(s);
        return -1;
    }
    s->nslots = nslots;
    s->cap = cap;
    s->head = s->tail = IRX_NIL;
    s->free = IRX_NIL;
    s->fresh = 0;
    return 0;
}

void irx_shadow_free(irx_shadow *s) {
    free(s->nodes);
    free(s->slots);
    *s = (irx_shadow){0};
}

size_t irx_shadow_bytes(const irx_shadow *s) {
    if (!s->nodes) return 0;
    return (size_t)s->cap * sizeof *s->nodes + (size_t)s->nslots * sizeof *s->slots;
}

uint32_t irx_shadow_find(const irx_shadow *s, ir_hash128 h) {
    if (!s->slots) return IRX_NIL;
    for (uint32_t j = home(s, h.lo);; j = next_slot(s, j)) {
        uint32_t i = irx_slot(s, j);
        if (i == IRX_NIL) return IRX_NIL;
        if (s->nodes[i].key == h.lo) return i;
    }
}

static void unlink_node(irx_shadow *s, uint32_t i) {
    irx_node *n = &s->nodes[i];
    if (n->prev != IRX_NIL)
        s->nodes[n->prev].next = n->next;
    else
        s->head = n->next;
    if (n->next != IRX_NIL)
        s->nodes[n->next].prev = n->prev;
    else
        s->tail = n->prev;
}

static void push_head(irx_shadow *s, uint32_t i) {
    irx_node *n = &s->nodes[i];
    n->prev = IRX_NIL;
    n->next = s->head;
    if (s->head != IRX_NIL)
        s->nodes[s->head].prev = i;
    else
        s->tail = i;
    s->head = i;
}

void irx_shadow_touch(irx_shadow *s, uint32_t i) {
    if (s->head == i) return;
    unlink_node(s, i);
    push_head(s, i);
}

static uint32_t take_node(irx_shadow *s, uint64_t key, uint32_t stamp) {
    uint32_t i = s->free;
    if (i != IRX_NIL)
        s->free = s->nodes[i].next;
    else
        i = s->fresh++; /* count < cap, so a never-used node is left */
    s->nodes[i] = (irx_node){.key = key, .stamp = stamp};
    push_head(s, i);
    s->count++;
    s->nlisted++;
    return i;
}

uint32_t irx_shadow_add(irx_shadow *s, ir_hash128 h, uint32_t stamp) {
    uint32_t i = take_node(s, h.lo, stamp);
    uint32_t j = home(s, h.lo);
    while (irx_slot(s, j) != IRX_NIL) j = next_slot(s, j);
    irx_slot_set(s, j, i);
    return i;
}

uint32_t irx_shadow_add_anon(irx_shadow *s) {
    s->nanon++;
    return take_node(s, 0, IRX_ANON_STAMP);
}

void irx_shadow_pin(irx_shadow *s, uint32_t i) {
    irx_node *n = &s->nodes[i];
    if (irx_node_anon(n)) return;
    if (irx_node_pins(n) == 0) {
        unlink_node(s, i);
        n->prev = IRX_PINNED;
        n->next = 0;
        s->nlisted--;
        s->npinned++;
    }
    n->next++;
}

void irx_shadow_unpin(irx_shadow *s, uint32_t i) {
    irx_node *n = &s->nodes[i];
    if (irx_node_pins(n) == 0) return;
    if (--n->next == 0) {
        push_head(s, i);
        s->nlisted++;
        s->npinned--;
    }
}

/* Backward-shift deletion: later entries of the probe run move up into the
 * hole when their home position allows it, so lookups never need tombstones. */
static void table_delete(irx_shadow *s, uint32_t i) {
    uint32_t hole = home(s, s->nodes[i].key);
    while (irx_slot(s, hole) != i) hole = next_slot(s, hole);
    for (uint32_t j = next_slot(s, hole);; j = next_slot(s, j)) {
        uint32_t k = irx_slot(s, j);
        if (k == IRX_NIL) break;
        uint32_t want = home(s, s->nodes[k].key);
        /* k may fill the hole when its home is not in (hole, j], cyclically. */
        bool stays = hole <= j ? (want > hole && want <= j) : (want > hole || want <= j);
        if (stays) continue;
        irx_slot_set(s, hole, k);
        hole = j;
    }
    irx_slot_set(s, hole, IRX_NIL);
}

void irx_shadow_remove(irx_shadow *s, uint32_t i) {
    irx_node *n = &s->nodes[i];
    bool pinned = irx_node_pins(n) != 0;
    if (irx_node_anon(n)) {
        s->nanon--;
    } else {
        table_delete(s, i);
    }
    if (!pinned) {
        unlink_node(s, i);
        s->nlisted--;
    } else {
        s->npinned--;
    }
    s->nodes[i].next = s->free;
    s->free = i;
    s->count--;
}

int irx_shadow_check(const irx_shadow *s) {
    if (!s->nodes) return s->count == 0 ? 0 : -1;
    uint32_t seen = 0, anon = 0, prev = IRX_NIL;
    for (uint32_t i = s->head; i != IRX_NIL; i = s->nodes[i].next) {
        if (seen++ > s->cap || s->nodes[i].prev != prev) return -1;
        prev = i;
        if (irx_node_anon(&s->nodes[i])) {
            anon++;
            continue;
        }
        ir_hash128 h = {s->nodes[i].key, 0};
        if (irx_shadow_find(s, h) != i) return -1;
    }
    if (prev != s->tail || seen != s->nlisted || anon != s->nanon) return -1;
    uint32_t used = 0, pinned = 0;
    for (uint32_t j = 0; j < s->nslots; j++) {
        if (irx_slot(s, j) == IRX_NIL) continue;
        used++;
        pinned += irx_node_pins(&s->nodes[irx_slot(s, j)]) != 0;
    }
    if (pinned != s->npinned || s->nlisted + s->npinned != s->count) return -1;
    if (s->count + s->nreserved > s->cap) return -1;
    return used + s->nanon == s->count ? 0 : -1;
}
