#include <gtest/gtest.h>

#include "combines.h"
#include "scanc/passes/passes.h"

namespace scanc {
namespace {

using namespace dsl;

// mamba-like: elementwise with broadcasting and literals, a two-leaf scan, a reversed scan with
// a captured value, slice and concat over symbolic sizes.
ProgramRef dsl_program() {
    ProgramBuilder p("mamba");
    Size b = p.symbol("B"), l = p.symbol("L", 1 << 20), d = p.symbol("D");
    Expr x = p.param("x", DType::F32, {b, l, d});
    Expr dt = p.param("dt", DType::F32, {b, l, d});
    Expr a = p.param("A", DType::F32, {d});
    Expr tau = p.param("tau", DType::F32, {b, 1, d});
    Exprs h = p.scan(test::affine(), {exp(dt * a), dt * x + 1}, 1);
    Exprs m = p.scan(test::smooth_max(), {h[1] * 0.5}, -2, true, {tau});
    Expr head = slice(m[0], 1, 0, 3);
    Expr tail = slice(m[0], 1, 3, l, 2);
    return p.build({h[1], concat(1, {head, tail}), cast(DType::I32, x > 0)});
}

// A copy of `node` that callers may corrupt.
std::shared_ptr<Node> copy(const NodeRef& node) { return std::make_shared<Node>(*node); }

ProgramRef with_results(const ProgramRef& p, std::vector<NodeRef> results) {
    auto out = std::make_shared<Program>(*p);
    out->results = std::move(results);
    return out;
}

TEST(Verify, AcceptsProgramsBuiltWithTheDsl) {
    EXPECT_NO_THROW(verify(*dsl_program()));
    ProgramBuilder empty("empty");
    EXPECT_NO_THROW(verify(*empty.build({})));
}

TEST(Verify, AcceptsStaticShapesOfAwkwardSizesAndCatchesAnOffByOneLength) {
    for (std::int64_t n : {0, 1, 2, 7, 15, 17, 31, 1025}) {
        ProgramBuilder pb("sizes");
        Expr x = pb.param("x", DType::I32, {3, n});
        Exprs sum = pb.scan(test::binary("sum", [](Expr a, Expr b) { return a + b; }), {x}, 1);
        Expr odd = slice(sum[0], 1, 1, n, 2);
        Expr joined = concat(1, {odd, x});
        ProgramRef p = pb.build({joined});
        EXPECT_NO_THROW(verify(*p)) << n;
        // concat of n/2 odd elements and n more.
        ASSERT_EQ(joined.type().shape[1].constant(), n / 2 + n) << n;
        auto bad = copy(joined.node());
        bad->types[0].shape[1] = Size(n / 2 + n + 1);
        EXPECT_THROW(verify(*with_results(p, {bad})), InternalError) << n;
    }
}

TEST(Verify, ACombineWithNoLeavesIsACompileError) {
    ProgramRef p = dsl_program();
    auto c = std::make_shared<Combine>();
    c->name = "nothing";
    auto scan = copy(p->results[0]->inputs[0]);
    scan->attr = ScanAttr{c, 0, 1, false};
    scan->inputs.clear();
    auto result = copy(p->results[0]);
    result->inputs[0] = scan;
    EXPECT_THROW(verify(*with_results(p, {result})), CompileError);
}

TEST(Verify, CatchesANodeWhoseStoredDtypeIsWrong) {
    ProgramRef p = dsl_program();
    auto bad = copy(p->results[0]);
    bad->types[0].dtype = DType::F64;
    EXPECT_THROW(verify(*with_results(p, {bad})), InternalError);
}

TEST(Verify, CatchesANodeWhoseStoredShapeIsWrong) {
    ProgramRef p = dsl_program();
    // The concat's length is 3 + the sliced tail; claim it is the input's length instead.
    auto bad = copy(p->results[1]);
    bad->types[0].shape = p->params[0]->type().shape;
    EXPECT_THROW(verify(*with_results(p, {bad})), InternalError);
}

TEST(Verify, CatchesAWrongTypeDeepInsideTheDag) {
    ProgramRef p = dsl_program();
    // Replace the exp(...) feeding the first scan with a copy claiming to be weak.
    const NodeRef& project = p->results[0];
    auto scan = copy(project->inputs[0]);
    auto leaf = copy(scan->inputs[0]);
    leaf->types[0].weak = true;
    scan->inputs[0] = leaf;
    auto result = copy(project);
    result->inputs[0] = scan;
    EXPECT_THROW(verify(*with_results(p, {result})), InternalError);
}

TEST(Verify, InputsThatNoLongerBroadcastAreACompileErrorAtTheNode) {
    ProgramBuilder pb("p");
    Expr x = pb.param("x", DType::F32, {pb.symbol("L")});
    Expr y = pb.param("y", DType::F32, {pb.symbol("D")});
    ProgramRef p = pb.build({x + x});
    auto bad = copy(p->results[0]);
    bad->inputs[1] = y.node();
    bad->loc = SourceLoc{"p.scan", 3, 9};
    try {
        verify(*with_results(p, {bad}));
        FAIL() << "no error";
    } catch (const CompileError& e) {
        EXPECT_EQ(e.loc().str(), "p.scan:3:9");
        EXPECT_NE(e.message().find("size L against D"), std::string::npos) << e.what();
    }
}

TEST(Verify, RejectsAParameterThatIsNotTheProgramsOwn) {
    ProgramBuilder pb("p");
    Expr x = pb.param("x", DType::F32, {4});
    ProgramRef p = pb.build({x + 1});
    ProgramBuilder other("other");
    Expr stranger = other.param("x", DType::F32, {4});
    EXPECT_THROW(verify(*with_results(p, {(stranger + 1).node()})), InternalError);
}

TEST(Verify, RejectsParametersOutOfPositionOrRole) {
    ProgramBuilder pb("p");
    Expr x = pb.param("x", DType::F32, {4});
    Expr y = pb.param("y", DType::F32, {4});
    ProgramRef p = pb.build({x + y});
    auto swapped = std::make_shared<Program>(*p);
    std::swap(swapped->params[0], swapped->params[1]);
    EXPECT_THROW(verify(*swapped), InternalError);
    auto wrong_role = std::make_shared<Program>(*p);
    auto param = copy(p->params[0]);
    param->attr = ParamAttr{ParamRole::Left, 0, "x"};
    wrong_role->params[0] = param;
    EXPECT_THROW(verify(*wrong_role), InternalError);
}

TEST(Verify, RejectsAResultWithSeveralOutputs) {
    ProgramRef p = dsl_program();
    const NodeRef& scan = p->results[0]->inputs[0];  // the two-leaf affine scan
    ASSERT_EQ(scan->op, Op::Scan);
    EXPECT_THROW(verify(*with_results(p, {scan})), InternalError);
}

TEST(Verify, RejectsAnUntypedCombineNodeInAProgram) {
    ProgramRef p = dsl_program();
    auto bad = copy(p->results[2]);
    bad->inputs[0] = Expr(2.0).node();  // a combine-level literal
    EXPECT_THROW(verify(*with_results(p, {bad})), InternalError);
}

// The affine scan of dsl_program() with its combine replaced.
ProgramRef with_combine(const ProgramRef& p, CombineRef combine) {
    auto scan = copy(p->results[0]->inputs[0]);
    auto attr = scan->as<ScanAttr>();
    attr.combine = std::move(combine);
    scan->attr = attr;
    auto result = copy(p->results[0]);
    result->inputs[0] = scan;
    return with_results(p, {result});
}

TEST(Verify, ACombineReturningTooFewValuesIsACompileErrorAtTheCombine) {
    ProgramRef p = dsl_program();
    auto c = std::make_shared<Combine>(*test::affine());
    c->results.pop_back();
    c->loc = SourceLoc{"m.scan", 2, 1};
    try {
        verify(*with_combine(p, c));
        FAIL() << "no error";
    } catch (const CompileError& e) {
        EXPECT_EQ(e.loc().str(), "m.scan:2:1");
        EXPECT_NE(e.message().find("returns 1 value for 2 leaves"), std::string::npos) << e.what();
    }
}

TEST(Verify, ACombineWithUnequalLeftAndRightParamsIsACompileError) {
    ProgramRef p = dsl_program();
    auto c = std::make_shared<Combine>(*test::affine());
    c->right.pop_back();
    EXPECT_THROW(verify(*with_combine(p, c)), CompileError);
}

TEST(Verify, ACombineReachingAnotherCombinesParamIsAnInternalError) {
    ProgramRef p = dsl_program();
    auto c = std::make_shared<Combine>(*test::affine());
    CombineRef stranger = test::affine();
    c->results[1] = make_elementwise(Op::Add, {c->left[1], stranger->right[1]});
    EXPECT_THROW(verify(*with_combine(p, c)), InternalError);
}

TEST(Verify, AcceptsACombineSharedByManyScans) {
    ProgramBuilder pb("shared");
    Size n = pb.symbol("N");
    Expr x = pb.param("x", DType::F64, {n, 3});
    CombineRef aff = test::affine();
    Exprs first = pb.scan(aff, {x, x}, 0);
    Exprs second = pb.scan(aff, {first[0], first[1]}, 1, true);
    EXPECT_NO_THROW(verify(*pb.build({second[0], second[1], first[1]})));
}

}  // namespace
}  // namespace scanc
