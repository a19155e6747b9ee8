/* The ELF rules every reader of the project shares, pure and whatever reaches
 * the bytes: the library reads objects in its own memory (lib/elfsym.c, and
 * its own build id, lib/block.c), the command reads files that may be another
 * process's and hostile (cmd/look/target.c). Each reader fetches the bytes its own
 * way; what they mean is decided here once. */
#ifndef EPOLLFIX_ELFRULE_H
#define EPOLLFIX_ELFRULE_H

#include <elf.h>
#include <stdint.h>

/* A note of a PT_NOTE segment whose header h starts at offset at of a segment
 * ending at end (offsets in any one space: memory or file): where its name and
 * descriptor start and where the next note does. 0, or -1 when the note does
 * not fit before end (then there are no more notes). */
struct ef_note {
	uint64_t name_at, desc_at, next;
};
int ef_note_layout(const Elf64_Nhdr *h, uint64_t at, uint64_t end, struct ef_note *n);

/* 1 when a note of header h is owner's of this type, by the size of its name
 * (the name's bytes, read by the caller, are compared by ef_note_named). */
int ef_note_is(const Elf64_Nhdr *h, const char *owner, uint32_t type);
int ef_note_named(const char *name, const char *owner);

/* dladdr(3)'s rule for a symbol that may name addr (both as the object's own
 * addresses): defined here, not absolute, not thread-local, and its extent
 * holds addr (a symbol without a size, only its own address). Of those, the
 * nearest below addr names it (ef_sym_nearer). */
int ef_sym_holds(uint16_t shndx, unsigned char info, uint64_t value, uint64_t size,
		 uint64_t addr);
int ef_sym_nearer(uint64_t value, int have_best, uint64_t best);

#endif
