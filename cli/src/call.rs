//! `leasefence call OP --PARAM VALUE ...`: any operation of the protocol, its options made from
//! the operation's signature ([`leasefence::protocol::operations`]), so an operation the crate
//! adds is callable here with no change to the CLI. The options become the protocol's request
//! line, read by the protocol's own reader: the checks and the answer are `batch`'s.

use clap::{Arg, ArgAction, ArgMatches};
use leasefence::protocol::{operations, Operation, Parameter, Request, Response};
use serde_json::{Map, Value};

/// The `call` command: one subcommand per operation, `claim_next` spelled `claim-next`.
pub(crate) fn command() -> clap::Command {
    let mut call = clap::Command::new("call")
        .bin_name("leasefence call")
        .about("Run any operation of the protocol, its options read from the operation's signature")
        .after_help(
            "Example:\n  leasefence --db queue.db call fence-floor\n  leasefence --db queue.db call renew --job j --owner w --fence 1 --ttl 30",
        )
        .subcommand_required(true);
    for op in operations() {
        call = call.subcommand(operation_command(&op));
    }
    call
}

fn operation_command(op: &Operation) -> clap::Command {
    let about = op.doc.split(". ").next().unwrap_or(op.doc);
    let mut command = clap::Command::new(op.name.replace('_', "-"))
        .about(about.trim_end_matches('.').to_owned())
        .long_about(op.doc);
    for parameter in &op.parameters {
        for arg in arguments(parameter) {
            command = command.arg(arg);
        }
    }
    command
}

/// The options of one parameter: its own, or (an object the protocol reads as members of the
/// request) one per member.
fn arguments(p: &Parameter) -> Vec<Arg> {
    match p.kind {
        "object" => p.members.iter().flat_map(arguments).collect(),
        "fenced_options" => vec![
            flag(
                "complete",
                "bool",
                true,
                "Complete the job in the same commit.",
            ),
            flag(
                "result",
                "string",
                true,
                "The result stored when it completes.",
            ),
        ],
        kind => {
            let help = match kind {
                "objects" | "statements" => "A JSON array.",
                "strings" => "A comma-separated list.",
                "number" if p.name == "now" => "Seconds (default: the wall clock, Unix seconds).",
                "number" => "Seconds.",
                _ => "",
            };
            // `now` defaults to the wall clock; a nullable field left out is null.
            let optional = p.optional || p.nullable || p.name == "now";
            vec![flag(p.name, kind, optional, help)]
        }
    }
}

fn flag(name: &'static str, kind: &str, optional: bool, help: &'static str) -> Arg {
    let arg = Arg::new(name)
        .long(name.replace('_', "-"))
        .required(!optional)
        .help(help);
    if kind == "bool" {
        return arg.action(ArgAction::SetTrue);
    }
    // A value may start with `-` (a negative time, an id).
    let arg = arg.allow_hyphen_values(true);
    match kind {
        "number" => arg
            .value_name("SECONDS")
            .value_parser(clap::value_parser!(f64)),
        "fence" | "integer" | "count" => arg.value_name("N").value_parser(clap::value_parser!(i64)),
        "strings" => arg.value_name("A,B").value_delimiter(','),
        "objects" | "statements" => arg.value_name("JSON"),
        _ => arg.value_name("TEXT"),
    }
}

/// The request `matches` (of `call OP ...`) names, as the protocol reads its line; `now` is the
/// wall clock when left out.
pub(crate) fn request(matches: &ArgMatches, wall_clock: f64) -> Result<Request, Response> {
    let Some((name, matches)) = matches.subcommand() else {
        return Err(bad_request("call: name an operation".into()));
    };
    let op = operations()
        .into_iter()
        .find(|op| op.name.replace('_', "-") == name)
        .ok_or_else(|| bad_request(format!("call: no operation {name}")))?;
    let mut line = Map::new();
    line.insert("op".into(), op.name.into());
    for parameter in &op.parameters {
        let members: Vec<&Parameter> = match parameter.kind {
            "object" => parameter.members.iter().collect(),
            _ => vec![parameter],
        };
        for p in members {
            if p.kind == "fenced_options" {
                line.insert("complete".into(), matches.get_flag("complete").into());
                let result = matches.get_one::<String>("result").cloned();
                line.insert("result".into(), result.map_or(Value::Null, Value::String));
                continue;
            }
            if let Some(value) = value_of(matches, p, wall_clock)? {
                line.insert(p.name.into(), value);
            }
        }
    }
    Request::parse(&Value::Object(line).to_string())
}

/// One option's value as the protocol's JSON; `None` leaves the field out.
fn value_of(
    matches: &ArgMatches,
    p: &Parameter,
    wall_clock: f64,
) -> Result<Option<Value>, Response> {
    let name = p.name;
    let value = match p.kind {
        "bool" => matches.get_flag(name).then_some(Value::Bool(true)),
        "number" => match matches.get_one::<f64>(name) {
            Some(n) => Some(number(*n, name)?),
            None if name == "now" => Some(number(wall_clock, name)?),
            None => None,
        },
        "fence" | "integer" | "count" => matches.get_one::<i64>(name).map(|n| (*n).into()),
        "strings" => matches
            .get_many::<String>(name)
            .map(|items| items.cloned().map(Value::String).collect()),
        "objects" | "statements" => match matches.get_one::<String>(name) {
            Some(text) => Some(serde_json::from_str(text).map_err(|err| {
                bad_request(format!("--{}: not JSON ({err})", name.replace('_', "-")))
            })?),
            None => None,
        },
        _ => matches.get_one::<String>(name).cloned().map(Value::String),
    };
    // A field that may be null but is always sent (complete's result, fail's retry_at).
    Ok(match value {
        None if p.nullable && !p.optional => Some(Value::Null),
        value => value,
    })
}

fn bad_request(message: String) -> Response {
    Response::Failed {
        code: "bad_request",
        message,
    }
}

fn number(n: f64, name: &str) -> Result<Value, Response> {
    serde_json::Number::from_f64(n)
        .map(Value::Number)
        .ok_or_else(|| {
            bad_request(format!(
                "--{}: {n} is not a finite number",
                name.replace('_', "-")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation's command is one clap accepts (its own checks, run on the whole tree).
    #[test]
    fn every_operation_has_a_valid_command() {
        command().debug_assert();
        let names: Vec<String> = command()
            .get_subcommands()
            .map(|sub| sub.get_name().to_owned())
            .collect();
        assert_eq!(names.len(), operations().len());
        assert!(names.iter().any(|name| name == "fence-floor"), "{names:?}");
    }

    fn request_of(words: &[&str]) -> Result<Request, Response> {
        let words = std::iter::once("call").chain(words.iter().copied());
        request(&command().try_get_matches_from(words).unwrap(), 1e9)
    }

    /// Options become the protocol's fields: `now` is the wall clock when left out, a nullable
    /// field left out is null, lists are split and objects read as JSON.
    #[test]
    fn options_become_the_protocol_request() {
        assert_eq!(
            request_of(&["renew", "--job", "j", "--owner", "w", "--fence", "2", "--ttl", "30"])
                .unwrap(),
            Request::Renew {
                job: "j".into(),
                owner: "w".into(),
                fence: 2,
                now: 1e9,
                ttl: 30.0
            }
        );
        assert_eq!(
            request_of(&["fail", "--job", "j", "--owner", "w", "--fence", "1", "--now", "-5"])
                .unwrap(),
            Request::Fail {
                job: "j".into(),
                owner: "w".into(),
                fence: 1,
                now: -5.0,
                retry_at: None,
                error: None
            }
        );
        let Request::ClaimNext { queues, .. } = request_of(&[
            "claim-next",
            "--owner",
            "w",
            "--ttl",
            "5",
            "--queues",
            "a,b",
        ])
        .unwrap() else {
            panic!("not claim_next");
        };
        assert_eq!(queues, Some(vec!["a".to_owned(), "b".to_owned()]));
        let Request::Schedule { tz, .. } = request_of(&[
            "schedule",
            "--name",
            "n",
            "--cron",
            "0 * * * *",
            "--tz",
            "Asia/Tokyo",
        ])
        .unwrap() else {
            panic!("not schedule");
        };
        assert_eq!(tz.as_deref(), Some("Asia/Tokyo"));
        assert_eq!(request_of(&["fence-floor"]).unwrap(), Request::FenceFloor);
        let bad = request_of(&["enqueue-many", "--jobs", "[{"]).unwrap_err();
        assert_eq!(bad.code(), Some("bad_request"));
        let unknown =
            request_of(&["enqueue-many", "--jobs", r#"[{"job":"a","color":1}]"#]).unwrap_err();
        assert_eq!(unknown.code(), Some("bad_request"), "{}", unknown.to_json());
    }
}
