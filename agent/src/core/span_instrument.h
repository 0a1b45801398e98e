/*
 * span_instrument.h - what the instrumentation (agent/preload/, instrument/) may do to the
 * calling thread's active span beyond the public API (internal; implemented in span.c). It
 * holds no thread or agent state: a plugin includes this, never context.h.
 */
#ifndef SW_CORE_SPAN_INSTRUMENT_H
#define SW_CORE_SPAN_INSTRUMENT_H

#include <stddef.h>
#include <stdint.h>

#include "skywalking.h"

/*
 * Tags of the active span whose strings are not copied into the arena (the instrumentation's
 * own tags, span.c). sw__span_tag_static keeps the literal `key` as given and copies `value`;
 * sw__span_tag_static_n copies the first `len` bytes of value; sw__span_tag_kept keeps both
 * (two literals). A kept string must stay valid and unchanged until the segment is encoded on
 * the consumer thread: a string literal of the agent, or a string in the active segment's arena
 * (sw__span_tag_kept_ with sw__span_operation's). The public sw_span_tag copies both. The
 * macros take the keys' lengths from the literals; a _len of 0 means "not known" and
 * SIZE_MAX for value_len "all of it" (copied) or "not known" (kept).
 */
int sw__span_tag_static_(const char *key, size_t key_len, const char *value, size_t value_len);
int sw__span_tag_kept_(const char *key, size_t key_len, const char *value, size_t value_len);
#define sw__span_tag_static(key, value) \
    sw__span_tag_static_("" key, sizeof(key) - 1, (value), SIZE_MAX)
#define sw__span_tag_static_n(key, value, len) \
    sw__span_tag_static_("" key, sizeof(key) - 1, (value), (len))
#define sw__span_tag_kept(key, value) \
    sw__span_tag_kept_("" key, sizeof(key) - 1, "" value, sizeof(value) - 1)

/* sw_span_set_layer and sw_span_set_component in one (layer: a valid sw_layer_t). */
void sw__span_set_layer_component(sw_layer_t layer, int32_t component_id);

/* The operation name of the active recorded span (in its segment's arena) and its length (0:
   not known), or NULL. */
const char *sw__span_operation(uint32_t *len);

#endif /* SW_CORE_SPAN_INSTRUMENT_H */
