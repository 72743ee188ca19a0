"""OpenTelemetry traces (SPEC §20), loaded only when the standard ``OTEL_*`` variables ask
for them: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``…_TRACES_ENDPOINT``), or ``OTEL_TRACES_EXPORTER``
(``otlp``, or ``console`` to see them on stdout). Without them nothing of OpenTelemetry is
imported. The official instrumentations make the spans: one per request
(opentelemetry-instrumentation-django), one per database statement (…-psycopg); a management
command is a span of its own (``manage.py``). ``fronts.operator.requests`` adds the space, the task
number and the member to the request's span.

Two steps, because gunicorn imports the application in its master and forks workers:
``instrument`` (before the application loads: Django's middleware is inserted then; no thread
is started) and ``start`` (in each process that sends spans: the exporter's thread).
"""
from __future__ import annotations

import os

ENABLED = bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
               or os.environ.get("OTEL_TRACES_EXPORTER", "none") not in ("", "none"))
_instrumented = False
_started = False


def instrument() -> None:
    """Patch Django and psycopg (idempotent); spans go to the provider ``start`` sets."""
    global _instrumented
    if not ENABLED or _instrumented:
        return
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    DjangoInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False)
    _instrumented = True


def start() -> None:
    """This process's tracer provider and exporter (a worker after the fork; a command)."""
    global _started
    if not ENABLED or _started:
        return
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME",
                                                                                        "spaces")}))
    if os.environ.get("OTEL_TRACES_EXPORTER", "otlp") == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _started = True


def annotate(request, match) -> None:
    """The space, task and member on the request's span."""
    if not ENABLED:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if not span.is_recording() or match is None:
        return
    if "slug" in match.kwargs:
        span.set_attribute("spaces.space", match.kwargs["slug"])
    if "number" in match.kwargs:
        span.set_attribute("spaces.task", str(match.kwargs["number"]))
    member = getattr(request, "user", None)
    if getattr(member, "space_id", None) is not None:
        span.set_attribute("spaces.member", member.pk)


def wake_context() -> str:
    """What a change that makes work ready adds to its notification: `` <traceparent>`` of the
    current span, so the waited ``next`` it wakes links to it; "" without traces."""
    if not ENABLED:
        return ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return ""
    return f" 00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def link_to(traceparent: str | None) -> None:
    """Link the current span (a waited next) to the change that woke it."""
    if not ENABLED or not traceparent:
        return
    from opentelemetry import trace
    from opentelemetry.trace import SpanContext, TraceFlags

    try:
        _, trace_id, span_id, flags = traceparent.split("-")
        context = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(int(flags, 16)))
    except ValueError:
        return
    trace.get_current_span().add_link(context, {"spaces.link": "woken by"})


def command_span(name: str, *, whole: bool = True):
    """A span for a management command (a context manager), or a no-op; not for a server
    (``whole=False``: its requests are the spans)."""
    if not ENABLED or not whole:
        from contextlib import nullcontext

        return nullcontext()
    from opentelemetry import trace

    return trace.get_tracer("spaces.commands").start_as_current_span(f"manage.py {name}")
