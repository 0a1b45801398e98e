/*
 * file_open.h - how the agent opens every file a setting names (internal): the config file
 * (SW_AGENT_CONFIG), the CA bundle (SW_AGENT_SSL_CA_FILE) and the file reporter's output
 * (SW_REPORTER_FILE_PATH).
 *
 * A file is opened with O_NONBLOCK | O_CLOEXEC | O_NOCTTY, so that opening never blocks (a
 * FIFO without a writer would block a plain open forever), the descriptor never leaks into a
 * program the host execs, and a terminal never becomes the host's controlling terminal. It is
 * then checked with fstat: a regular file or a character device (/dev/null) is accepted; a
 * FIFO, a socket, a directory or a block device is refused with a message naming the setting.
 * The descriptor stays non-blocking: a read or write that would block fails instead.
 *
 * Pure apart from the file system; any thread; nothing here blocks.
 */
#ifndef SW_CONFIG_FILE_OPEN_H
#define SW_CONFIG_FILE_OPEN_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Opens `path`, named by the setting `key`, with `flags` (O_RDONLY, or O_WRONLY | O_CREAT |
 * O_APPEND ...) and `mode` for a new file. Returns the descriptor, or a negative SW_E* code
 * (SW_ECONFIG for a refused kind of file, SW_EIO when open or fstat fail) with a message
 * naming key and the (escaped) path in errbuf.
 */
int sw__file_open(const char *key, const char *path, int flags, mode_t mode, char *errbuf,
                  size_t errlen);

/*
 * Reads the whole file named by `key` (at most `max` bytes) into a malloc'd buffer with a NUL
 * appended (*out, *len without the NUL). Returns 0, SW_ENOMEM, or SW_ECONFIG with a message
 * naming key (cannot open, a refused kind of file, unreadable, larger than max). Never prints
 * the file's content.
 */
int sw__file_read(const char *key, const char *path, size_t max, char **out, size_t *len,
                  char *errbuf, size_t errlen);

#endif /* SW_CONFIG_FILE_OPEN_H */
