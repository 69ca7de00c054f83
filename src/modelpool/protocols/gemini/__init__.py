"""The Google Gemini API (`/v1beta/models/{model}:generateContent` and friends), the fourth dialect.

One place for the dialect (SPEC §1.1, §1.6):
- `wire`: request checks (the model and the stream flag come from the URL), the error shape, usage and
  finish reasons, the model list, upstream URLs;
- `events`: what one stream event means (for the native relay: content, reasoning, the final event);
- `to_chat`: a Gemini request as a Chat Completions body (the hub every translation goes through:
  Messages routes get it through `translate_request.openai_to_anthropic`), with its function-call ids;
- `losses`: what that translation leaves out (the loss walk);
- `reply`: a non-stream reply (`translate_body.Reply`) as a `GenerateContentResponse`;
- `encode`: the stream encoder (any upstream decoder → Gemini SSE events).
"""
