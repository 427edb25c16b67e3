/* ThreadSanitizer annotations for orderings it cannot see.
 *
 * liburcu is not instrumented: a node published with cds_lfht_add (a release
 * store inside liburcu) and found by cds_lfht_lookup (a dependent load there)
 * looks to TSan like an unsynchronised read of the node's initialisation.
 * These mark the same release/acquire pair on the node itself; they compile
 * to nothing outside a -fsanitize=thread build. */
#ifndef PROCFAST_TSAN_H
#define PROCFAST_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define PROCFAST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROCFAST_TSAN 1
#endif
#endif

#ifdef PROCFAST_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_published(p) __tsan_release((void *)(p))
#define tsan_found(p) __tsan_acquire((void *)(p))
#else
#define tsan_published(p) ((void)(p))
#define tsan_found(p) ((void)(p))
#endif

#endif
