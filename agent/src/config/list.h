/*
 * list.h - the one tokenizer of the agent's comma-separated settings (internal).
 *
 * Used by SW_AGENT_IGNORE_SUFFIX, the SW_CYG_* pattern lists, SW_KAFKA_PRODUCER_CONFIG and
 * SW_AGENT_COLLECTOR_BACKEND_SERVICES. An item is what stands between two commas (or an end),
 * with spaces and tabs trimmed at both ends; it points into the caller's text, which is not
 * modified and must outlive the items. There is no quoting: an item cannot contain a comma.
 *
 * Header-only (static inline): a few lines used by config parsing only, so that every user
 * gets it without another translation unit in the library's build list.
 *
 * Usage:
 *     const char *cursor = text;            // NULL: an empty list
 *     size_t len;
 *     for (const char *item; (item = sw__list_next(&cursor, &len)) != NULL;)
 *         use(item, len);
 *
 * Pure functions over the caller's memory: any thread, no allocation, no blocking.
 */
#ifndef SW_CONFIG_LIST_H
#define SW_CONFIG_LIST_H

#include <stddef.h>
#include <string.h>

/* Whether c is trimmed from the ends of an item. */
static inline int sw__list_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Trims spaces and tabs at both ends of the `*len` bytes at `*s` (updates both). */
static inline void sw__text_trim(const char **s, size_t *len)
{
    while (*len > 0 && sw__list_is_blank(**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && sw__list_is_blank((*s)[*len - 1])) {
        (*len)--;
    }
}

/*
 * Returns the next item of the list at *cursor, empty items included ("a,,b" gives "a", "",
 * "b"; "" gives one empty item), with its trimmed length in *len; NULL after the last item.
 * Advances *cursor past the item and its comma; after the last item *cursor is NULL. For
 * callers that must reject empty items; the others use sw__list_next.
 */
static inline const char *sw__list_item_next(const char **cursor, size_t *len)
{
    const char *item = *cursor;
    if (item == NULL) {
        return NULL;
    }
    const char *comma = strchr(item, ',');
    size_t n = comma != NULL ? (size_t)(comma - item) : strlen(item);
    *cursor = comma != NULL ? comma + 1 : NULL;
    sw__text_trim(&item, &n);
    *len = n;
    return item;
}

/*
 * Returns the next non-empty item of the list at *cursor (trimmed; its length in *len), or
 * NULL when no non-empty item is left. Empty items (",,", " , ", a trailing comma) are skipped.
 * Advances *cursor like sw__list_item_next.
 */
static inline const char *sw__list_next(const char **cursor, size_t *len)
{
    const char *item;
    while ((item = sw__list_item_next(cursor, len)) != NULL) {
        if (*len > 0) {
            return item;
        }
    }
    return NULL;
}

#endif /* SW_CONFIG_LIST_H */
