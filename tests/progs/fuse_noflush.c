/* A FUSE file system of one file that never answers FLUSH: what any user
 * can mount (most distributions let fusermount do it unprivileged; the suite
 * runs it as root). Speaks the kernel's protocol itself (linux/fuse.h), one
 * request at a time, so the test needs no libfuse.
 *
 * Usage: ef-fuse-noflush MOUNTPOINT FILE
 * Mounts MOUNTPOINT with one entry, "prog": FILE's bytes and mode, then
 * serves until killed (its end aborts the connection: every request left
 * unanswered fails, and whoever waited on one goes on). Each FLUSH it leaves
 * unanswered is said on stderr ("flush pending from pid N"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT 1
#define FILE_ID 2

static int dev;
static int backing;
static struct stat bst;

static void reply(uint64_t unique, int error, const void *data, size_t len)
{
	struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + len), .error = -error, .unique = unique };
	char buf[sizeof(h) + 131072];
	if (len > sizeof(buf) - sizeof(h))
		len = sizeof(buf) - sizeof(h), h.len = (uint32_t)(sizeof(h) + len);
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), data, len);
	if (write(dev, buf, h.len) < 0 && errno != ENOENT) /* ENOENT: interrupted meanwhile */
		perror("ef-fuse-noflush: write");
}

static void attr(uint64_t id, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = id;
	a->nlink = 1;
	if (id == ROOT) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | (bst.st_mode & 07777);
		a->size = (uint64_t)bst.st_size;
		a->blocks = ((uint64_t)bst.st_size + 511) / 512;
	}
	a->blksize = 4096;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ef-fuse-noflush MOUNTPOINT FILE\n");
		return 2;
	}
	backing = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (backing < 0 || fstat(backing, &bst) != 0) {
		perror(argv[2]);
		return 1;
	}
	dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		perror("/dev/fuse");
		return 1;
	}
	char opts[128];
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev);
	if (mount("ef-noflush", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts) != 0) {
		perror("mount");
		return 1;
	}
	signal(SIGTERM, SIG_DFL);
	static char buf[FUSE_MIN_READ_BUFFER + 131072];
	for (;;) {
		ssize_t n = read(dev, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			if (errno == ENODEV) /* unmounted */
				return 0;
			perror("ef-fuse-noflush: read");
			return 1;
		}
		if ((size_t)n < sizeof(struct fuse_in_header))
			continue;
		struct fuse_in_header *h = (void *)buf;
		void *in = buf + sizeof(*h);
		switch (h->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *i = in;
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
						   .minor = FUSE_KERNEL_MINOR_VERSION,
						   .max_readahead = i->max_readahead,
						   .max_write = 65536 };
			reply(h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o;
			if (h->nodeid != ROOT || strcmp(in, "prog") != 0) {
				reply(h->unique, ENOENT, NULL, 0);
				break;
			}
			memset(&o, 0, sizeof(o));
			o.nodeid = FILE_ID;
			o.entry_valid = 3600;
			o.attr_valid = 3600;
			attr(FILE_ID, &o.attr);
			reply(h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o;
			memset(&o, 0, sizeof(o));
			o.attr_valid = 3600;
			attr(h->nodeid, &o.attr);
			reply(h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN:
		case FUSE_OPENDIR: {
			struct fuse_open_out o = { .fh = 1, .open_flags = FOPEN_KEEP_CACHE };
			reply(h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ: {
			const struct fuse_read_in *r = in;
			static char data[131072];
			size_t want = r->size < sizeof(data) ? r->size : sizeof(data);
			ssize_t got = pread(backing, data, want, (off_t)r->offset);
			reply(h->unique, got < 0 ? errno : 0, data, got < 0 ? 0 : (size_t)got);
			break;
		}
		case FUSE_FLUSH:
			/* Never answered: the closer waits for good (FLUSH is
			 * sent forced, in an uninterruptible wait). */
			fprintf(stderr, "flush pending from pid %u\n", h->pid);
			break;
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
			reply(h->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break; /* no answer is expected */
		case FUSE_DESTROY:
			reply(h->unique, 0, NULL, 0);
			return 0;
		default:
			reply(h->unique, ENOSYS, NULL, 0);
			break;
		}
	}
}
