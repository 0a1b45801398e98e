/*
 * log_report_hpp.cpp - the lines test_log_report.c sends through skywalking.hpp's
 * skywalking::log (the C++ side of log_report::the_cxx_api_sends_lines_with_logger_and_tags).
 */
#include <string>
#include <string_view>

#include "skywalking.hpp"

extern "C" int log_report_hpp_lines(void);

/* Logs two lines inside the caller's active span; returns 0 when both were queued. The views
   point into longer texts, so a line that is not cut exactly at their ends shows it. */
extern "C" int log_report_hpp_lines(void)
{
    std::string all = "cxx line one|trailing text that must not be sent";
    std::string_view message(all.data(), all.find('|'));
    std::string tags = "attempt=2;zone=eu-west";
    std::string_view attempt(tags.data(), 7), two(tags.data() + 8, 1);
    std::string_view zone(tags.data() + 10, 4), region(tags.data() + 15, 7);
    int rc = skywalking::log(SW_SEVERITY_WARN, message, std::string_view("payments.retry", 8),
                             {{attempt, two}, {zone, region}});
    int rc2 = skywalking::log(SW_SEVERITY_INFO, std::string("cxx line two"));
    int rc3 = skywalking::log(SW_SEVERITY_INFO, std::string_view());
    return rc == 0 && rc2 == 0 && rc3 == SW_EINVAL ? 0 : -1;
}
