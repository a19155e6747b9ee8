/* The status block (live.h, in common/: the command reads it) of this process: constants at build time, the
 * addresses and the build id filled once by the constructor (lifecycle.c). Nothing here runs on
 * the wait path, installs a handler or writes a file. */
#define _GNU_SOURCE
#include "live.h"

#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "elfrule.h"
#include "epollfix.h"
#include "real.h"
#include "recognize.h"
#include "state.h"
#include "stats.h"

_Static_assert(sizeof(EPOLLFIX_VERSION) <= sizeof(((struct ef_live *)0)->version),
	       "the version fits the block");

/* EF_NOTE_CONFIG_FILE (live.h): a note section, which the linker puts in a
 * PT_NOTE segment, written in assembly for its type. */
#define EF_STR_(x) #x
#define EF_STR(x) EF_STR_(x)
__asm__(".pushsection .note.epollfix.config, \"a\", %note\n"
	".balign 4\n"
	".long 2f - 1f\n" /* namesz */
	".long 4f - 3f\n" /* descsz */
	".long " EF_STR(EF_NOTE_CONFIG_FILE) "\n"
	"1: .asciz \"" EF_NOTE_OWNER "\"\n"
	"2: .balign 4\n"
	"3: .asciz \"" EF_SYSCONF_FILE "\"\n"
	"4: .balign 4\n"
	".popsection\n");

/* used: nothing in the library reads it; the command does, from outside. */
__attribute__((used, section(EF_LIVE_SECTION), aligned(64))) static struct ef_live block = {
	.magic = EF_LIVE_MAGIC,
	.layout = EF_LIVE_LAYOUT,
	.size = sizeof(struct ef_live),
	.version = EPOLLFIX_VERSION,
};

struct note_search {
	const void *inside; /* an address of this library */
	struct ef_live *b;
};

static int copy_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct note_search *s = arg;
	uintptr_t a = (uintptr_t)s->inside;
	int ours = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !ours; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;
		ours = p->p_type == PT_LOAD && a >= lo && a < lo + p->p_memsz;
	}
	if (!ours)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_NOTE)
			continue;
		const char *seg = (const char *)(info->dlpi_addr + p->p_vaddr);
		struct ef_note n;
		for (uint64_t at = 0;
		     at + sizeof(Elf64_Nhdr) <= p->p_memsz &&
		     ef_note_layout((const Elf64_Nhdr *)(seg + at), at, p->p_memsz, &n) == 0;
		     at = n.next) {
			const Elf64_Nhdr *h = (const Elf64_Nhdr *)(seg + at);
			if (ef_note_is(h, "GNU", NT_GNU_BUILD_ID) && ef_note_named(seg + n.name_at, "GNU") &&
			    h->n_descsz <= sizeof(s->b->build_id)) {
				memcpy(s->b->build_id, seg + n.desc_at, h->n_descsz);
				s->b->build_id_len = h->n_descsz;
				return 1;
			}
		}
	}
	return 1;
}

void ef_live_init(void)
{
	struct note_search s = { &block, &block };
	uint64_t seq_addr, words_addr, selected_addr, state_addr, why_addr;
	uint32_t nwords;

	dl_iterate_phdr(copy_build_id, &s);
	ef_state_live(&seq_addr, &words_addr, &nwords, &selected_addr);
	ef_pwait2_live(&state_addr, &why_addr);
	block.self = (uint64_t)(uintptr_t)&block;
	block.slots = (uint64_t)(uintptr_t)ef_stats_all();
	block.nslots = EF_SLOTS;
	block.nkeys = EF_K_COUNT;
	block.config_seq = seq_addr;
	block.config_words = words_addr;
	block.nwords = nwords;
	block.selected = selected_addr;
	block.pwait2_state = state_addr;
	block.pwait2_why = why_addr;
	block.runtimes = ef_runtimes_live();
	block.site_rows = (uint64_t)(uintptr_t)ef_site_rows;
	block.nsite_rows = EF_SITE_ROWS;
	block.site_row_size = sizeof(struct ef_site_row);
	atomic_thread_fence(memory_order_release);
	block.ready = 1;
}
