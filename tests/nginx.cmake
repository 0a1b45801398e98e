# ngx_http_skywalking_module against the real Debian nginx (label nginx): each case of
# integration/nginx/test_nginx.py is its own test. Default preset only (Debian's nginx is not
# sanitized), and only where agent/nginx built the module (nginx-dev installed).
if(SW_SANITIZE OR NOT TARGET nginx_module)
  return()
endif()

set(SW_NGINX_TEST_ENV
  SW_NGINX_MODULE=${PROJECT_BINARY_DIR}/agent/nginx/ngx_http_skywalking_module.so
  SW_AGENT_LIB_DIR=$<TARGET_FILE_DIR:skywalking_shared>
  SW_SWTRACE=$<TARGET_FILE:swtrace>
  SW_PL_SERVER=$<TARGET_FILE:pl_server>
  SW_PRELOAD_LIB=$<TARGET_FILE:skywalking-preload>)

foreach(case config spans w3c grpc fastcgi_uwsgi hostile reload dead_collector)
  add_test(NAME nginx_${case}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/nginx/test_nginx.py
                   ${case})
  set_tests_properties(nginx_${case} PROPERTIES LABELS nginx TIMEOUT 300
                       ENVIRONMENT "${SW_NGINX_TEST_ENV}")
endforeach()

# The benchmark (tests/bench/nginx_bench.py: module on versus off, same run, wrk); ctest runs a
# seconds-long smoke of it.
add_test(NAME nginx_bench_smoke
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tests/bench/nginx_bench.py --smoke)
set_tests_properties(nginx_bench_smoke PROPERTIES LABELS "bench;nginx" TIMEOUT 300
                     ENVIRONMENT "${SW_NGINX_TEST_ENV}")
