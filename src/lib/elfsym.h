/* A loaded object's dynamic symbol table, read in memory from its program
 * headers (what dl_iterate_phdr reports): no dlsym, no file access, no
 * allocation, no lock. Used once per new call site to recognise the event loop
 * that called, whenever its object was loaded.
 *
 * The addresses in the dynamic section (DT_SYMTAB, DT_STRTAB, DT_HASH,
 * DT_GNU_HASH) are link-time addresses in the file. glibc adds the load bias to
 * them in place when the section is writable (x86-64, aarch64) and leaves the
 * vDSO's and read-only sections (riscv, mips) as they are; musl never changes
 * them. Each is taken as it stands if it points into the object and with the
 * bias added otherwise, so both loaders' objects read the same. */
#ifndef EPOLLFIX_ELFSYM_H
#define EPOLLFIX_ELFSYM_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

struct ef_elf {
	uintptr_t bias; /* dlpi_addr: file address + bias = memory address */
	const ElfW(Phdr) *phdr;
	size_t phnum;
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const uint32_t *hash;     /* DT_HASH, or NULL */
	const uint32_t *gnu_hash; /* DT_GNU_HASH, or NULL */
	uint32_t nsyms;           /* symbols in symtab, 0 when no table gives it */
};

/* 1 when addr lies in one of the object's loaded segments. */
int ef_elf_contains(uintptr_t bias, const ElfW(Phdr) *phdr, size_t phnum, uintptr_t addr);

/* The program headers of an object whose first loaded segment, mapped from
 * map_start to map_end, holds its ELF header (as linkers lay objects out):
 * NULL when it does not. */
const ElfW(Phdr) *ef_elf_phdr_at(const void *map_start, const void *map_end, size_t *phnum);

/* Finds the dynamic symbol table from the program headers. dyn: the dynamic
 * section to read instead of PT_DYNAMIC's (for tests), or NULL. Returns 0, or
 * -1 when the object has no usable table (o then finds nothing). */
int ef_elf_open(struct ef_elf *o, uintptr_t bias, const ElfW(Phdr) *phdr, size_t phnum,
		const ElfW(Dyn) *dyn);

/* The object's own definition of name (not an undefined reference), through
 * its GNU or SysV hash table; NULL if it defines none. */
const ElfW(Sym) *ef_elf_lookup(const struct ef_elf *o, const char *name);

/* The name of the defined function or object symbol whose extent holds addr
 * (a memory address), or NULL: what dladdr's dli_sname gives for exported code. */
const char *ef_elf_symbol_at(const struct ef_elf *o, uintptr_t addr);

/* 1 when some defined symbol's name starts with prefix. */
int ef_elf_defines_prefix(const struct ef_elf *o, const char *prefix);

#endif
