// Engine metrics (docs/INFERENCE.md "Engine metrics"): the Prometheus text parser on real
// exposition and on hostile bytes, engine detection, which samples are kept.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "requests/engine_names.h"
#include "requests/prom_text.h"

using namespace causeway::requests;

TEST_CASE("parse_prometheus: vLLM's exposition, comments, labels, histogram series, timestamps") {
  const std::string text =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 3.0\n"
      "vllm:num_preemptions_total{engine=\"0\", model_name=\"m\"} 12\r\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 1.5e3 1700000000000\n"
      "\n"
      "   \n"
      "plain 7\n"
      "esc{a=\"x\\\"y\\\\z\\n\"} -2.5\n"
      "empty{} 1\n";
  PromParse p = parse_prometheus(text);
  REQUIRE(p.samples.size() == 6);
  CHECK(p.bad_lines == 0);
  CHECK(p.samples[0].name == "vllm:num_requests_running");
  CHECK(p.samples[0].labels == "engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"");
  CHECK(p.samples[0].value == 3.0);
  CHECK(p.samples[1].labels == "engine=\"0\",model_name=\"m\"");  // canonical: no blanks
  CHECK(p.samples[1].value == 12);
  CHECK(p.samples[2].value == 1500);
  CHECK(p.samples[3].name == "plain");
  CHECK(p.samples[3].labels.empty());
  CHECK(p.samples[4].labels == "a=\"x\\\"y\\\\z\\n\"");
  CHECK(p.samples[4].value == -2.5);
  CHECK(p.samples[5].labels.empty());
}

TEST_CASE("parse_prometheus: hostile input is skipped and counted, never a crash or a wrong sample") {
  const std::string text =
      "1bad 3\n"                      // name starts with a digit
      "bad{a=\"unterminated} 1\n"     // label value never closed
      "bad{a=x} 1\n"                  // unquoted value
      "bad{a=\"\\q\"} 1\n"            // unknown escape
      "bad{=\"v\"} 1\n"               // no label name
      "bad 1 2 3\n"                   // junk after the timestamp
      "bad 12abc\n"                   // not a number
      "bad\n"                         // no value
      "bad{a=\"v\"}1\n"               // no blank before the value
      "nan NaN\n"                     // not finite: dropped
      "inf +Inf\n"
      "good 1\n";
  PromParse p = parse_prometheus(text);
  REQUIRE(p.samples.size() == 1);
  CHECK(p.samples[0].name == "good");
  CHECK(p.bad_lines == 9);
  CHECK(p.dropped == 2);

  // Bounds: a line over the cap is skipped whole; samples past the cap are counted.
  PromLimits lim;
  lim.max_samples = 3;
  lim.max_line_bytes = 64;
  std::string many;
  for (int i = 0; i < 10; ++i) many += "m" + std::to_string(i) + " 1\n";
  many += "long{a=\"" + std::string(200, 'x') + "\"} 1\n";
  p = parse_prometheus(many, lim);
  CHECK(p.samples.size() == 3);
  CHECK(p.dropped == 7);
  CHECK(p.bad_lines == 1);

  // Random bytes, NULs, a huge single line: bounded work, every sample well-formed.
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string junk(1 + rng() % 3000, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 4 == 0 ? "a{}=\" \n:_1."[rng() % 12] : rng() % 256);
    PromParse j = parse_prometheus(junk);
    for (const auto& s : j.samples) {
      CHECK(!s.name.empty());
      CHECK(s.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:") == std::string::npos);
    }
  }
  CHECK(parse_prometheus(std::string(1 << 20, 'x')).samples.empty());
}

TEST_CASE("engines: named from command lines and process titles, else from their metric names") {
  CHECK(engine_from_cmdline(std::string("vllm\0serve\0meta-llama/Llama-3.1-8B", 34)) == Engine::vllm);
  CHECK(engine_from_cmdline("VLLM::EngineCore") == Engine::vllm);
  CHECK(engine_from_cmdline(std::string("/usr/bin/python3\0-m\0sglang.launch_server", 40)) == Engine::sglang);
  CHECK(engine_from_cmdline("text-generation-router") == Engine::tgi);
  CHECK(engine_from_cmdline("python3 server.py") == Engine::unknown);
  CHECK(engine_from_samples({{"go_goroutines", "", 1}, {"vllm:num_requests_running", "", 1}}) == Engine::vllm);
  CHECK(engine_from_samples({{"tgi_queue_size", "", 1}}) == Engine::tgi);
  CHECK(engine_from_samples({{"sglang:num_queue_reqs", "", 1}}) == Engine::sglang);
  CHECK(engine_from_samples({{"process_cpu_seconds_total", "", 1}}) == Engine::unknown);
  CHECK(std::string(engine_name(Engine::sglang)) == "sglang");
}

TEST_CASE("keep_sample: an engine's own series (histogram and counter suffixes included); unknown endpoints raw") {
  CHECK(keep_sample(Engine::vllm, "vllm:num_requests_waiting"));
  CHECK(keep_sample(Engine::vllm, "vllm:num_preemptions_total"));
  CHECK(keep_sample(Engine::vllm, "vllm:time_to_first_token_seconds_bucket"));
  CHECK(keep_sample(Engine::vllm, "vllm:kv_cache_usage_perc"));
  CHECK_FALSE(keep_sample(Engine::vllm, "python_gc_objects_collected_total"));
  CHECK_FALSE(keep_sample(Engine::vllm, "vllm:num_requests_waiting_bucketX"));
  CHECK(keep_sample(Engine::tgi, "tgi_queue_size"));
  CHECK(keep_sample(Engine::tgi, "tgi_request_queue_duration_sum"));
  CHECK(keep_sample(Engine::sglang, "sglang:num_retracted_requests_total"));
  CHECK(keep_sample(Engine::unknown, "anything_at_all"));
  // Every role name is one the engine's filter keeps.
  for (Role r : {Role::running, Role::waiting, Role::kv_cache_usage, Role::preemptions})
    for (std::string_view n : role_names(r)) {
      Engine e = n.rfind("vllm:", 0) == 0 ? Engine::vllm : n.rfind("sglang:", 0) == 0 ? Engine::sglang : Engine::tgi;
      CHECK_MESSAGE(keep_sample(e, n), n);
    }
}
