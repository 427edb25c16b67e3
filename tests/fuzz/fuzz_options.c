/* options_parse (fs/daemon/options.c) on a command line made of the input: the
 * input's NUL-separated pieces are the arguments after "procfast" ("-o",
 * "source=/x,ro", a mount point...). It must never crash nor leak, and what
 * it accepts must be valid. It prints its complaints to stderr. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/daemon/options.h"

#define MAX_ARGS 64

static int has_arg(const struct fuse_args *args, const char *arg)
{
	for (int i = 0; i < args->argc; i++)
		if (!strcmp(args->argv[i], arg))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *argv[MAX_ARGS + 1] = { "procfast" };
	int argc = 1;
	struct fuse_args args;
	struct options o;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *p = text; p <= text + size && argc < MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;

	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	if (options_parse(&args, &o) == 0) {
		/* no source: /proc (fs/daemon/source.c) */
		assert(!o.hidepid || o.hide_level == 0 || o.hide_level == 1 || o.hide_level == 2 ||
		       o.hide_level == 4);
		assert(!o.subset || !strcmp(o.subset, "pid"));
		assert(!o.events || !strcmp(o.events, "on") || !strcmp(o.events, "off"));
		assert(o.event_rcvbuf >= 0);
		assert(o.entry_timeout >= 0 && o.entry_timeout <= 3600);
		assert(o.attr_timeout >= 0 && o.attr_timeout <= 3600);
		assert(o.npositional >= 0 && o.npositional <= 2);
		assert(has_arg(&args, "-ofsname=procfast,subtype=procfast,default_permissions"));
	}
	options_free(&o);
	fuse_opt_free_args(&args);
	free(text);
	return 0;
}
