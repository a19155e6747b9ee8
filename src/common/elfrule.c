#include "elfrule.h"

#include <string.h>

int ef_note_layout(const Elf64_Nhdr *h, uint64_t at, uint64_t end, struct ef_note *n)
{
	/* Sizes are 32-bit: in 64 bits neither sum below can wrap. */
	n->name_at = at + sizeof(*h);
	n->desc_at = n->name_at + ((h->n_namesz + 3ull) & ~3ull);
	n->next = n->desc_at + ((h->n_descsz + 3ull) & ~3ull);
	return at + sizeof(*h) <= end && n->desc_at + h->n_descsz <= end ? 0 : -1;
}

int ef_note_is(const Elf64_Nhdr *h, const char *owner, uint32_t type)
{
	return h->n_type == type && h->n_namesz == strlen(owner) + 1;
}

int ef_note_named(const char *name, const char *owner)
{
	return memcmp(name, owner, strlen(owner) + 1) == 0;
}

int ef_sym_holds(uint16_t shndx, unsigned char info, uint64_t value, uint64_t size,
		 uint64_t addr)
{
	if (shndx == SHN_UNDEF || shndx == SHN_ABS || ELF64_ST_TYPE(info) == STT_TLS ||
	    addr < value)
		return 0;
	return size ? addr - value < size : addr == value;
}

int ef_sym_nearer(uint64_t value, int have_best, uint64_t best)
{
	return !have_best || value > best;
}
