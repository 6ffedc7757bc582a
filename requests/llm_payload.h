// What an inference request and its response say about the model and its tokens, read from
// the body bytes the kernel side copied (docs/INFERENCE.md "Model and tokens"). OpenAI-style
// bodies (vLLM, SGLang, TGI's /v1 routes, llama.cpp, Ollama's /v1) and TGI's own /generate
// shapes. Bodies may be cut short (a syscall's copy ends, a body over kMaxPayloadBytes): the
// fields before the cut are still read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace causeway::requests {

// Body bytes kept per request and per response for these fields; SSE events are read one by one.
inline constexpr size_t kMaxPayloadBytes = 64 * 1024;
// A model name longer than this is cut (it is a label, not data).
inline constexpr size_t kMaxModelBytes = 128;

// The request body: top-level "model", the output cap ("max_tokens", "max_completion_tokens",
// TGI's "parameters": {"max_new_tokens"}).
struct RequestFields {
  std::string model;
  std::optional<uint64_t> max_tokens;
};
// cut: the body goes on past these bytes (unseen, or over the cap); a value the cut may have
// shortened (a number) is not read.
RequestFields read_request_fields(std::string_view body, bool cut = false);

// A response body (non-streamed JSON) or one SSE event's data: "usage" {"prompt_tokens",
// "completion_tokens"} (the OpenAI shape; with stream_options.include_usage the last event
// before [DONE] carries it), TGI's "details" {"generated_tokens"} (and "prefill" is not read),
// "model", and how many choices carry generated text in this payload: choices[].delta.content
// (chat) or choices[].text (completions) non-empty, or TGI's "token" {"text"}.
struct ResponseFields {
  std::string model;
  std::optional<uint64_t> prompt_tokens, completion_tokens;
  uint32_t content_choices = 0;
};
ResponseFields read_response_fields(std::string_view payload, bool cut = false);

}  // namespace causeway::requests
