/* index_internal.h: the pieces of the index, shared by its files only. */
#ifndef IR_INDEX_INTERNAL_H
#define IR_INDEX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

#define IRX_NIL   UINT32_MAX
#define IRX_FRESH 0x80000000u /* stamp bit: the block was added by that stamp's record */

/* One block in a replica's shadow: its hash, its LRU links (node numbers) and
 * the stamp of the last record that touched it. */
typedef struct irx_node {
    uint64_t lo, hi;
    uint32_t prev, next; /* prev is towards the most recent end */
    uint32_t stamp;
} irx_node;

/* A replica's shadow LRU: a fixed pool of cap nodes, an open-addressing table
 * of node numbers (linear probing, backward-shift deletion), and the LRU list
 * from head (most recent) to tail (oldest). Owned by its replica; guarded by
 * the replica's lock. */
typedef struct irx_shadow {
    irx_node *nodes;
    uint32_t *slots;
    uint32_t mask; /* slots has mask + 1 entries, a power of two >= 2 * cap */
    uint32_t cap, count;
    uint32_t head, tail, free;
} irx_shadow;

int irx_shadow_init(irx_shadow *s, uint32_t cap);
void irx_shadow_free(irx_shadow *s);
size_t irx_shadow_bytes(const irx_shadow *s);
/* Node number holding h, or IRX_NIL. */
uint32_t irx_shadow_find(const irx_shadow *s, ir_hash128 h);
/* Makes node i the most recent. */
void irx_shadow_touch(irx_shadow *s, uint32_t i);
/* Adds h as the most recent block; the shadow must have room (count < cap). */
uint32_t irx_shadow_add(irx_shadow *s, ir_hash128 h, uint32_t stamp);
/* Removes node i. */
void irx_shadow_remove(irx_shadow *s, uint32_t i);
/* 0 when the table and the list agree; -1 otherwise. */
int irx_shadow_check(const irx_shadow *s);

#endif
