/*
 * consumer.c - a program outside this tree using the installed libskywalking, built by
 * check_install.sh with `cc consumer.c $(pkg-config --cflags --libs skywalking)` and with
 * -finstrument-functions (the installed library provides the hooks). Configured from the
 * environment (SW_AGENT_NAME, SW_REPORTER_FILE_PATH, SW_CYG_INCLUDE). Exits 0 when its one
 * segment was reported.
 */
#include <skywalking.h>
#include <stdio.h>

/* Instrumented: a local span named after it (SW_CYG_INCLUDE=consumer_*). */
void consumer_query(void)
{
    sw_exit_span_begin("SELECT 1", "db:5432");
    sw_span_set_layer(SW_LAYER_DATABASE);
    sw_span_end();
}

int main(void)
{
    int rc = sw_init(NULL);
    if (rc != 0) {
        fprintf(stderr, "consumer: sw_init: %s\n", sw_strerror(rc));
        return 1;
    }
    sw_entry_span_begin("GET /c-consumer", NULL);
    sw_span_tag("consumer", "c");
    consumer_query();
    sw_span_end();
    sw_shutdown();
    sw_stats_t st;
    sw_stats(&st);
    printf("consumer: finished=%llu reported=%llu\n", (unsigned long long)st.segments_finished,
           (unsigned long long)st.segments_reported);
    return st.segments_finished == 1 && st.segments_reported == 1 ? 0 : 1;
}
