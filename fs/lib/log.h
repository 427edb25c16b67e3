/* The one logging module: stderr in the foreground, syslog once daemonized. */
#ifndef PROCFAST_LOG_H
#define PROCFAST_LOG_H

#include <syslog.h>

void log_to_syslog(void);
int log_uses_syslog(void);
void log_set_debug(int on);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
