"""The languages parsed since tree-sitter's Ruby, PHP, Kotlin, Scala, Swift, Lua, Bash, Elixir, Haskell, Dart and Zig
wheels: each a small file written the way its community writes it, read by the real loader with the real
grammar: its symbols (names, kinds, lines), its doc comment in its symbol's chunk, its calls and bases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from retrievo import Config, Engine
from retrievo.ingest.chunkers import chunk_document
from retrievo.ingest.loaders import Skip, load_file
from retrievo.models import Kind, LoadedDocument


@dataclass(frozen=True)
class Sample:
    name: str
    source: str
    # (qualified name, kind, first line, last line): a symbol's lines include the doc comment above it
    symbols: set[tuple[str, str, int, int]]
    # qualified name → (how its chunk starts: its doc comment, the docstring read from it)
    documented: dict[str, tuple[str, str]]
    # (source, kind, target name) among the edges found
    edges: set[tuple[str, str, str]] = field(default_factory=set)


SAMPLES: dict[str, Sample] = {
    "ruby": Sample(
        "base.rb",
        """# frozen_string_literal: true

require 'rack'

module Sinatra
  # Methods available to routes, before filters and views.
  module Helpers
    # Set or retrieve the response status code.
    def status(value = nil)
      response.status = Rack::Utils.status_code(value) if value
      response.status
    end
  end

  # Base class for all Sinatra applications and middleware.
  class Base < Rack::Builder
    include Helpers

    class << self
      # Defines a route for GET requests.
      def get(path, opts = {}, &block)
        route('GET', path, opts, &block)
      end
    end

    def call(env)
      dup.call!(env)
    end
  end
end
""",
        {
            ("base.Sinatra", "namespace", 5, 30),
            ("base.Sinatra.Base", "class", 15, 29),
            ("base.Sinatra.Base.call", "method", 26, 28),
            ("base.Sinatra.Base.get", "method", 20, 23),
            ("base.Sinatra.Helpers", "namespace", 6, 13),
            ("base.Sinatra.Helpers.status", "method", 8, 12),
        },
        {
            "base.Sinatra.Base": (
                "# Base class for all Sinatra applications and middleware.\n  class Base < Rack::Builder",
                "Base class for all Sinatra applications and middleware.",
            ),
            "base.Sinatra.Helpers.status": (
                "# Set or retrieve the response status code.\n    def status(value = nil)",
                "Set or retrieve the response status code.",
            ),
        },
        {
            ("base", "imports", "rack"),
            ("base.Sinatra.Base", "inherits", "Builder"),
            ("base.Sinatra.Base.get", "calls", "route"),
        },
    ),
    "php": Sample(
        "Router.php",
        """<?php

namespace Illuminate\\Routing;

use Illuminate\\Container\\Container;

/**
 * The router: registers routes and dispatches requests to them.
 */
class Router extends Registrar implements BindingRegistrar
{
    use Macroable;

    /**
     * Register a new GET route with the router.
     */
    public function get(string $uri, $action = null): Route
    {
        return $this->addRoute(['GET', 'HEAD'], $uri, $action);
    }

    protected function addRoute(array $methods, string $uri, $action): Route
    {
        return $this->routes->add(new Route($methods, $uri, $action));
    }
}

interface BindingRegistrar
{
    public function bind(string $key, $binder);
}

trait Macroable
{
    public static function macro(string $name, $macro): void
    {
        static::$macros[$name] = $macro;
    }
}

/** Get the available container instance. */
function app(?string $abstract = null): mixed
{
    return Container::getInstance()->make($abstract);
}
""",
        {
            ("Router.BindingRegistrar", "interface", 28, 31),
            ("Router.BindingRegistrar.bind", "method", 30, 30),
            ("Router.Macroable", "interface", 33, 39),
            ("Router.Macroable.macro", "method", 35, 38),
            ("Router.Router", "class", 7, 26),
            ("Router.Router.addRoute", "method", 22, 25),
            ("Router.Router.get", "method", 14, 20),
            ("Router.app", "function", 41, 45),
        },
        {
            "Router.Router.get": (
                "/**\n     * Register a new GET route with the router.\n     */\n    public function get(",
                "Register a new GET route with the router.",
            ),
            "Router.app": (
                "/** Get the available container instance. */\nfunction app(",
                "Get the available container instance.",
            ),
        },
        {
            ("Router", "imports", "Container"),
            ("Router.Router", "inherits", "Registrar"),
            ("Router.Router", "implements", "BindingRegistrar"),
            ("Router.Router.get", "calls", "addRoute"),
            ("Router.Router.addRoute", "calls", "Route"),
        },
    ),
    "kotlin": Sample(
        "Application.kt",
        """package io.ktor.server.application

import io.ktor.events.Events
import kotlinx.coroutines.CoroutineScope

/**
 * Represents a configured and running web application, capable of handling requests.
 */
public class Application internal constructor(
    environment: ApplicationEnvironment,
    public val monitor: Events,
) : ApplicationCallPipeline(environment.developmentMode), CoroutineScope {

    /** Called by the engine when the application stops. */
    public fun dispose() {
        monitor.raise(ApplicationStopped, this)
        cancel()
    }

    public companion object {
        public fun create(environment: ApplicationEnvironment): Application = Application(environment, Events())
    }
}

/// A plugin that can be installed into an [Application].
public interface ApplicationPlugin<out TConfig : Any> {
    public fun install(pipeline: Application): TConfig
}

public enum class ApplicationState {
    Starting,
    Started,
}

public typealias ApplicationModule = Application.() -> Unit
""",
        {
            ("Application.Application", "class", 6, 23),
            ("Application.Application.create", "method", 21, 21),
            ("Application.Application.dispose", "method", 14, 18),
            ("Application.ApplicationModule", "type", 35, 35),
            ("Application.ApplicationPlugin", "interface", 25, 28),
            ("Application.ApplicationPlugin.install", "method", 27, 27),
            ("Application.ApplicationState", "enum", 30, 33),
        },
        {
            "Application.Application": (
                "/**\n * Represents a configured and running web application",
                "Represents a configured and running web application, capable of handling requests.",
            ),
            "Application.Application.dispose": (
                "/** Called by the engine when the application stops. */\n    public fun dispose()",
                "Called by the engine when the application stops.",
            ),
            "Application.ApplicationPlugin": (
                "/// A plugin that can be installed into an [Application].\npublic interface ApplicationPlugin",
                "A plugin that can be installed into an [Application].",
            ),
        },
        {
            ("Application", "imports", "Events"),
            ("Application.Application", "inherits", "ApplicationCallPipeline"),
            ("Application.Application", "inherits", "CoroutineScope"),
            ("Application.Application.dispose", "calls", "raise"),
        },
    ),
    "scala": Sample(
        "ActorSystem.scala",
        """package akka.actor

import scala.concurrent.Future

/**
 * An actor system is a hierarchical group of actors which share common configuration.
 */
abstract class ActorSystem(val name: String) extends ActorRefFactory with ClassicActorSystemProvider {

  /** Terminates this actor system by running the coordinated shutdown. */
  def terminate(): Future[Terminated] = {
    log.info("terminating {}", name)
    shutdown(name)
  }

  def deadLetters: ActorRef
}

object ActorSystem {
  def apply(name: String): ActorSystem = new ActorSystemImpl(name)
}

trait Extension

case class Terminated(actor: ActorRef)
""",
        {
            ("ActorSystem.ActorSystem", "class", 5, 17),
            ("ActorSystem.ActorSystem", "class", 19, 21),
            ("ActorSystem.ActorSystem.apply", "method", 20, 20),
            ("ActorSystem.ActorSystem.deadLetters", "method", 16, 16),
            ("ActorSystem.ActorSystem.terminate", "method", 10, 14),
            ("ActorSystem.Extension", "interface", 23, 23),
            ("ActorSystem.Terminated", "class", 25, 25),
        },
        {
            "ActorSystem.ActorSystem.terminate": (
                "/** Terminates this actor system by running the coordinated shutdown. */\n  def terminate()",
                "Terminates this actor system by running the coordinated shutdown.",
            ),
        },
        {
            ("ActorSystem.ActorSystem", "inherits", "ActorRefFactory"),
            ("ActorSystem.ActorSystem", "inherits", "ClassicActorSystemProvider"),
            ("ActorSystem.ActorSystem.terminate", "calls", "shutdown"),
            ("ActorSystem.ActorSystem.apply", "calls", "ActorSystemImpl"),
        },
    ),
    "swift": Sample(
        "Session.swift",
        """import Foundation

/// `Session` creates and manages Alamofire's `Request` types during their lifetimes.
open class Session: NSObject, URLSessionDelegate {
    public let session: URLSession

    /// Creates a `DataRequest` from a `URLRequestConvertible` value.
    open func request(_ convertible: URLRequestConvertible) -> DataRequest {
        let request = DataRequest(convertible: convertible)
        perform(request)
        return request
    }

    public init(session: URLSession) {
        self.session = session
        super.init()
    }
}

public protocol RequestInterceptor {
    func adapt(_ urlRequest: URLRequest) throws -> URLRequest
}

public struct HTTPMethod: RawRepresentable {
    public let rawValue: String
}

extension Session {
    func cancelAllRequests() {}
}
""",
        {
            ("Session.HTTPMethod", "struct", 24, 26),
            ("Session.RequestInterceptor", "interface", 20, 22),
            ("Session.RequestInterceptor.adapt", "method", 21, 21),
            ("Session.Session", "class", 3, 18),
            ("Session.Session", "impl", 28, 30),
            ("Session.Session.cancelAllRequests", "method", 29, 29),
            ("Session.Session.init", "method", 14, 17),
            ("Session.Session.request", "method", 7, 12),
        },
        {
            "Session.Session.request": (
                "/// Creates a `DataRequest` from a `URLRequestConvertible` value.\n    open func request(",
                "Creates a `DataRequest` from a `URLRequestConvertible` value.",
            ),
        },
        {
            ("Session", "imports", "Foundation"),
            ("Session.Session", "inherits", "NSObject"),
            ("Session.Session.request", "calls", "perform"),
        },
    ),
    "lua": Sample(
        "queue.lua",
        """local json = require("cjson")

local Queue = {}
Queue.__index = Queue

--- Creates an empty queue.
-- @return Queue
function Queue.new()
  return setmetatable({ first = 1, last = 0, items = {} }, Queue)
end

--- Pushes a value at the end.
function Queue:push(value)
  self.last = self.last + 1
  self.items[self.last] = value
end

local function encode(queue)
  return json.encode(queue.items)
end

return Queue
""",
        {
            ("queue.Queue.new", "function", 6, 10),
            ("queue.Queue.push", "method", 12, 16),
            ("queue.encode", "function", 18, 20),
        },
        {
            "queue.Queue.new": (
                "--- Creates an empty queue.\n-- @return Queue\nfunction Queue.new()",
                "Creates an empty queue.",
            ),
            "queue.Queue.push": (
                "--- Pushes a value at the end.\nfunction Queue:push(value)",
                "Pushes a value at the end.",
            ),
        },
        {("queue", "imports", "cjson"), ("queue.Queue.new", "calls", "setmetatable")},
    ),
    "shell": Sample(
        "install.sh",
        """#!/usr/bin/env bash
set -euo pipefail

source ./lib/common.sh

# Prints how to call this script, then exits.
usage() {
  echo "usage: $0 [--prefix DIR]"
  exit 1
}

function install_binary {
  local prefix="$1"
  mkdir -p "$prefix/bin"
  cp build/tool "$prefix/bin/"
}

main() {
  [[ $# -gt 0 ]] || usage
  install_binary "$2"
}

main "$@"
""",
        {
            ("install.install_binary", "function", 12, 16),
            ("install.main", "function", 18, 21),
            ("install.usage", "function", 6, 10),
        },
        {
            "install.usage": (
                "# Prints how to call this script, then exits.\nusage() {",
                "Prints how to call this script, then exits.",
            ),
        },
        {("install.main", "calls", "install_binary"), ("install.main", "calls", "usage")},
    ),
    "elixir": Sample(
        "router.ex",
        '''defmodule Phoenix.Router do
  @moduledoc """
  Provides routing for Phoenix applications.
  """

  alias Phoenix.Router.Route

  @doc """
  Generates a route match based on an arbitrary HTTP method.
  """
  @spec match(atom(), String.t(), module()) :: Macro.t()
  defmacro match(verb, path, plug) do
    add_route(:match, verb, path, plug)
  end

  defp add_route(kind, verb, path, plug) do
    Route.build(kind, verb, path, plug)
  end

  defp normalize(nil), do: []
  defp normalize(list) when is_list(list), do: list

  defmodule Helpers do
    @moduledoc false

    # Builds the path helper's name.
    def name(route), do: route.helper
  end
end
''',
        {
            ("router.Phoenix.Router", "namespace", 1, 29),
            ("router.Phoenix.Router.Helpers", "namespace", 23, 28),
            ("router.Phoenix.Router.Helpers.name", "function", 26, 27),
            ("router.Phoenix.Router.add_route", "function", 16, 18),
            ("router.Phoenix.Router.match", "function", 8, 14),
            ("router.Phoenix.Router.normalize", "function", 20, 21),
        },
        {
            "router.Phoenix.Router.match": (
                '@doc """\n  Generates a route match based on an arbitrary HTTP method.\n  """\n  @spec match(',
                "Generates a route match based on an arbitrary HTTP method.",
            ),
            "router.Phoenix.Router.Helpers.name": (
                "# Builds the path helper's name.\n    def name(route)",
                "Builds the path helper's name.",
            ),
        },
        {
            ("router.Phoenix.Router", "imports", "Route"),
            ("router.Phoenix.Router.match", "calls", "add_route"),
            ("router.Phoenix.Router.add_route", "calls", "build"),
        },
    ),
    "haskell": Sample(
        "Queue.hs",
        """module Data.Queue
  ( Queue
  , push
  ) where

import qualified Data.List as List

-- | A first-in first-out queue, kept as two lists.
data Queue a = Queue [a] [a]
  deriving (Show)

-- | Push a value at the back.
push :: a -> Queue a -> Queue a
push x (Queue front back) = Queue front (x : back)

pop :: Queue a -> Maybe (a, Queue a)
pop (Queue [] []) = Nothing
pop (Queue [] back) = pop (Queue (List.reverse back) [])
pop (Queue (x : front) back) = Just (x, Queue front back)

class Container f where
  empty :: f a

instance Container Queue where
  empty = Queue [] []
""",
        {
            ("Queue.Container", "interface", 21, 22),
            ("Queue.Queue", "impl", 24, 25),
            ("Queue.Queue", "type", 8, 10),
            ("Queue.Queue.empty", "method", 25, 25),
            ("Queue.pop", "function", 16, 19),
            ("Queue.push", "function", 12, 14),
        },
        {
            "Queue.push": (
                "-- | Push a value at the back.\npush :: a -> Queue a -> Queue a\npush x",
                "Push a value at the back.",
            ),
        },
        {("Queue", "imports", "List")},
    ),
    "dart": Sample(
        "counter.dart",
        """import 'package:flutter/widgets.dart';

/// A counter that rebuilds when its value changes.
class Counter extends StatefulWidget implements Listenable {
  /// Creates a counter starting at [initial].
  const Counter({super.key, this.initial = 0});

  final int initial;

  @override
  State<Counter> createState() => _CounterState();

  int get doubled => initial * 2;
}

mixin Logging on Object {
  void log(String message) {
    print(message);
  }
}

enum Direction { up, down }

/// Runs the counter app.
void main() {
  runApp(const Counter());
}
""",
        {
            ("counter.Counter", "class", 3, 14),
            ("counter.Counter.Counter", "method", 5, 6),
            ("counter.Counter.createState", "method", 10, 11),
            ("counter.Counter.doubled", "method", 13, 13),
            ("counter.Direction", "enum", 22, 22),
            ("counter.Logging", "class", 16, 20),
            ("counter.Logging.log", "method", 17, 19),
            ("counter.main", "function", 24, 27),
        },
        {
            "counter.Counter.Counter": (
                "/// Creates a counter starting at [initial].\n  const Counter(",
                "Creates a counter starting at [initial].",
            ),
            "counter.main": ("/// Runs the counter app.\nvoid main() {", "Runs the counter app."),
        },
        {("counter.Counter", "inherits", "StatefulWidget"), ("counter.Counter", "implements", "Listenable")},
    ),
    "zig": Sample(
        "list.zig",
        """//! A growable list of bytes.
const std = @import("std");
const Allocator = std.mem.Allocator;

/// A list that grows as items are appended.
pub const ByteList = struct {
    items: []u8,
    allocator: Allocator,

    /// Make an empty list that allocates with `allocator`.
    pub fn init(allocator: Allocator) ByteList {
        return .{ .items = &.{}, .allocator = allocator };
    }

    pub fn append(self: *ByteList, byte: u8) !void {
        try self.ensureCapacity(self.items.len + 1);
        self.items[self.items.len - 1] = byte;
    }

    fn ensureCapacity(self: *ByteList, wanted: usize) !void {
        const grown = try self.allocator.realloc(self.items, @intCast(wanted));
        self.items = grown;
    }
};

/// Where a list's bytes go when it is flushed.
pub const Sink = enum { stdout, stderr };

pub const ListError = error{ OutOfMemory, Closed };

const Value = union(enum) {
    int: i64,
    float: f64,

    pub fn isZero(self: Value) bool {
        return switch (self) {
            .int => |i| i == 0,
            .float => |f| f == 0,
        };
    }
};

const limit = 64;

/// Sum the bytes of a list.
pub fn sum(list: ByteList) u64 {
    var total: u64 = 0;
    for (list.items) |byte| total += byte;
    return total;
}

test "sum of an empty list is zero" {
    const list = ByteList.init(std.testing.allocator);
    try std.testing.expectEqual(@as(u64, 0), sum(list));
}
""",
        {
            ("list.ByteList", "struct", 5, 24),
            ("list.ByteList.init", "method", 10, 13),
            ("list.ByteList.append", "method", 15, 18),
            ("list.ByteList.ensureCapacity", "method", 20, 23),
            ("list.Sink", "enum", 26, 27),
            ("list.ListError", "enum", 29, 29),
            ("list.Value", "struct", 31, 41),
            ("list.Value.isZero", "method", 35, 40),
            ("list.sum", "function", 45, 50),
        },
        {
            "list.ByteList": (
                "/// A list that grows as items are appended.\npub const ByteList = struct {",
                "A list that grows as items are appended.",
            ),
            "list.ByteList.init": (
                "/// Make an empty list that allocates with `allocator`.\n    pub fn init(",
                "Make an empty list that allocates with `allocator`.",
            ),
            "list.sum": ("/// Sum the bytes of a list.\npub fn sum(", "Sum the bytes of a list."),
        },
        {
            ("list", "imports", "std"),
            ("list.ByteList.append", "calls", "ensureCapacity"),
            ("list.ByteList.ensureCapacity", "calls", "realloc"),
        },
    ),
}


def _load(language: str, tmp_path: Path) -> tuple[LoadedDocument, str]:
    sample = SAMPLES[language]
    path = tmp_path / sample.name
    path.write_text(sample.source)
    loaded = load_file(path, 10**7)
    assert not isinstance(loaded, Skip) and loaded.kind == Kind.CODE
    assert loaded.metadata["language"] == language
    return loaded, sample.source


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_language_reads_its_symbols_with_kinds_and_lines(language: str, tmp_path: Path) -> None:
    loaded, _ = _load(language, tmp_path)
    assert loaded.structure is not None
    found = {(s.qualified_name, s.kind, s.line_start, s.line_end) for s in loaded.structure.symbols}
    assert found == SAMPLES[language].symbols, sorted(found)


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_a_doc_comment_sits_in_the_chunk_of_the_symbol_it_documents(language: str, tmp_path: Path) -> None:
    """Above a definition, its doc comment (Ruby's ``#``, Kotlin's ``/** */``, Haskell's ``-- |``, Elixir's ``@doc``
    and ``@spec``) starts the definition's chunk and gives its docstring; no comment is a chunk of its own."""
    loaded, source = _load(language, tmp_path)
    assert loaded.structure is not None
    chunks = chunk_document(loaded)
    assert all(source[c.start : c.end] == c.text for c in chunks)
    symbols = {s.qualified_name: s for s in loaded.structure.symbols}
    for qualified_name, (start, docstring) in SAMPLES[language].documented.items():
        first = next(c for c in chunks if c.metadata.get("symbol") == qualified_name)
        assert first.text.startswith(start), (qualified_name, first.text)
        assert symbols[qualified_name].docstring == docstring
        assert f"Doc: {docstring}" in first.context
    comment_marks = ("#", "//", "/*", "*", "--", "@doc")
    assert not any(
        all(not line.strip() or line.strip().startswith(comment_marks) for line in c.text.splitlines())
        and c.metadata.get("symbol_kind") != "module"
        for c in chunks
    ), "a doc comment alone in a chunk"


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_calls_imports_and_bases_become_edges(language: str, tmp_path: Path) -> None:
    loaded, _ = _load(language, tmp_path)
    assert loaded.structure is not None
    found = {(e.source, e.kind, e.target_name) for e in loaded.structure.edges}
    assert found >= SAMPLES[language].edges, sorted(found)


def test_an_engine_finds_each_languages_symbols_where_they_are_written(tmp_path: Path) -> None:
    repository = tmp_path / "polyglot"
    repository.mkdir()
    for sample in SAMPLES.values():
        (repository / sample.name).write_text(sample.source)
    with Engine(Config(db=tmp_path / "code.db", embedder="none")) as engine:
        report = engine.index([repository])
        assert report.documents_added == len(SAMPLES) and not report.skipped
        for language, sample in SAMPLES.items():
            for qualified_name, kind, line_start, line_end in sample.symbols:
                hits = engine.find_symbol(qualified_name, language=language, kind=kind)
                assert any(
                    (h.path.endswith(sample.name), h.line_start, h.line_end) == (True, line_start, line_end)
                    for h in hits
                ), (qualified_name, hits)
        methods = engine.find_symbol("*", language="ruby", kind="method", limit=10)
        assert {h.name for h in methods} == {"status", "get", "call"}
        hits = engine.search("Generates a route match", mode="keyword", limit=3).hits
        assert hits and hits[0].chunk.metadata["symbol"] == "router.Phoenix.Router.match"


CPP_HEADER = """\
#include <string>

namespace fmt {
// A buffer that grows as formatted output is written to it.
template <typename T> class basic_memory_buffer {
 public:
  void push_back(const T& value) { grow(size_ + 1); }

 private:
  void grow(std::size_t capacity);
  std::size_t size_;
};
}  // namespace fmt
"""

C_HEADER = """\
#include <stddef.h>

/* A buffer of bytes. */
struct buffer {
  char *data;
  size_t size;
};

int buffer_grow(struct buffer *b, size_t capacity);
"""


def test_a_header_is_read_as_the_language_it_holds(tmp_path: Path) -> None:
    """A ``.h`` holding C++ (a namespace, a template, access labels) is read as C++: its class and method
    are symbols; one holding C stays C."""
    for name, text, language in (("format.h", CPP_HEADER, "cpp"), ("buffer.h", C_HEADER, "c")):
        path = tmp_path / name
        path.write_text(text)
        loaded = load_file(path, 10**7)
        assert not isinstance(loaded, Skip) and loaded.metadata["language"] == language, name
    cpp = load_file(tmp_path / "format.h", 10**7)
    assert not isinstance(cpp, Skip) and cpp.structure is not None
    names = {s.name for s in cpp.structure.symbols}
    assert {"basic_memory_buffer", "push_back"} <= names, names


def test_a_zig_builtin_is_no_call_and_a_plain_constant_no_symbol(tmp_path: Path) -> None:
    """``@intCast(x)``, ``@as(T, x)`` are the language's, not calls of the code's (``@import`` is an import);
    ``const limit = 64;`` holds no type: it stays in the module's chunk, and the test block with it."""
    loaded, _ = _load("zig", tmp_path)
    assert loaded.structure is not None
    targets = {e.target_name for e in loaded.structure.edges}
    assert not targets & {"intCast", "as"}, targets
    assert "limit" not in {s.name for s in loaded.structure.symbols}
    module = [c.text for c in chunk_document(loaded) if c.metadata.get("symbol_kind") == "module"]
    assert any("const limit = 64;" in text for text in module)
    assert any(text.startswith('test "sum of an empty list is zero"') for text in module)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("bang.zig", "//! What this file is for.\npub fn main() void {}\n"),
        ("bang.rs", "//! What this crate is for.\npub fn main() {}\n"),
        ("block.rs", "/*! What this crate is for. */\npub fn main() {}\n"),
    ],
)
def test_an_inner_doc_comment_documents_its_module_not_the_next_definition(
    name: str, source: str, tmp_path: Path
) -> None:
    """``//!`` and ``/*!`` (Rust's, Zig's) document the file or module they are in, even right above a function."""
    path = tmp_path / name
    path.write_text(source)
    loaded = load_file(path, 10**7)
    assert not isinstance(loaded, Skip) and loaded.structure is not None
    (main,) = loaded.structure.symbols
    assert (main.name, main.line_start, main.docstring) == ("main", 2, "")


def test_a_zig_type_function_s_functions_are_the_methods_of_the_type_it_returns(tmp_path: Path) -> None:
    """``fn List(comptime T: type) type { return struct { … } }``: how Zig writes a generic container."""
    path = tmp_path / "list.zig"
    path.write_text(
        "/// A list of T.\npub fn List(comptime T: type) type {\n    return struct {\n        items: []T,\n\n"
        "        /// How many items.\n        pub fn len(self: @This()) usize {\n            return self.items.len;\n"
        "        }\n    };\n}\n"
    )
    loaded = load_file(path, 10**7)
    assert not isinstance(loaded, Skip) and loaded.structure is not None
    found = {
        (s.qualified_name, s.kind, s.line_start, s.line_end, s.docstring) for s in loaded.structure.symbols
    }
    assert found == {
        ("list.List", "function", 1, 11, "A list of T."),
        ("list.List.len", "method", 6, 9, "How many items."),
    }


@pytest.mark.parametrize(
    ("name", "source", "symbol", "docstring"),
    [
        (
            "buffer.hpp",
            "//! A buffer that grows.\nclass buffer {\n  int size_;\n};\n",
            "buffer",
            "A buffer that grows.",
        ),
        (
            "buffer.c",
            "/*! A buffer that grows. */\nint grow(int n) { return n * 2; }\n",
            "grow",
            "A buffer that grows.",
        ),
        ("banner.js", "/*! banner v1 | MIT */\nfunction main() { return 1; }\n", "main", "banner v1 | MIT"),
    ],
)
def test_outside_rust_and_zig_a_bang_comment_still_documents_the_definition_below(
    name: str, source: str, symbol: str, docstring: str, tmp_path: Path
) -> None:
    """In C and C++ ``//!`` and ``/*!`` are Doxygen's (Qt's) marks for the definition below; in JavaScript a
    ``/*!`` banner right above a function reads as before: only Rust's and Zig's inner doc comments document
    their module."""
    path = tmp_path / name
    path.write_text(source)
    loaded = load_file(path, 10**7)
    assert not isinstance(loaded, Skip) and loaded.structure is not None
    (found,) = loaded.structure.symbols
    assert (found.name, found.line_start, found.docstring) == (symbol, 1, docstring)
