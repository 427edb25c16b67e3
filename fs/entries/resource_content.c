/* A container's resource file as content operations (content.h): whose
 * cgroup is decided at open (LXCFS decides at each read; the init of a
 * namespace does not change, and its cgroups are read afresh with each
 * text), the text made from the source's at each read from the start. */
#include "fs/entries/content.h"
#include "fs/entries/name_class.h"
#include "fs/resources/resources.h"

static int resource_opened(const struct node *n, pid_t opener, struct content_state *st)
{
	(void)n;
	if (!resources_on())
		return 0;
	st->res = resources_target(opener);
	return 1;
}

static int resource_applies(const struct node *n, const struct content_state *st, pid_t tid)
{
	(void)n, (void)st, (void)tid;
	return 1;
}

static int resource_make(const struct node *n, const struct content_state *st, char *src,
			 size_t len, char **text, size_t *text_len)
{
	(void)len;
	return resources_render((enum res_file)n->cls->content_arg, &st->res, src, text, text_len);
}

const struct content_ops resource_content = {
	.name = "resource",
	.first_read = 64 * 1024, /* meminfo, stat and cpuinfo fit it */
	.any_offset = 1,
	.as_caller = 1,
	.opened = resource_opened,
	.applies = resource_applies,
	.make = resource_make,
};
